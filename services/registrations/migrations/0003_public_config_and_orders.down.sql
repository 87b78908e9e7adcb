DROP INDEX registrations_orders_by_user;
DROP TABLE conventions;
DROP TABLE organization;
