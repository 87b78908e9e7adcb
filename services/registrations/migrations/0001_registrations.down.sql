DROP TABLE registrations;
