DROP TABLE conventions;
DROP TABLE organization;
