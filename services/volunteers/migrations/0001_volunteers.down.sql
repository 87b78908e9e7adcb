DROP TABLE volunteers;
DROP TABLE departments;
