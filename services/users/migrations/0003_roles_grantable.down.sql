ALTER TABLE roles DROP COLUMN grantable;
