DROP TABLE consents;
DROP TABLE signing_keys;
DROP TABLE clients;
