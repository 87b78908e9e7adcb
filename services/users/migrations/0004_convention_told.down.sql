DROP TABLE convention_told;
