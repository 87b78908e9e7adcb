-- docker compose only: one login role and one database per service (development
-- passwords). Tables are not created here: each service's `migrate up` does that.
CREATE ROLE auth LOGIN PASSWORD 'auth';
CREATE DATABASE auth OWNER auth;
CREATE ROLE users LOGIN PASSWORD 'users';
CREATE DATABASE users OWNER users;
CREATE ROLE volunteers LOGIN PASSWORD 'volunteers';
CREATE DATABASE volunteers OWNER volunteers;
CREATE ROLE registrations LOGIN PASSWORD 'registrations';
CREATE DATABASE registrations OWNER registrations;
CREATE ROLE dealers LOGIN PASSWORD 'dealers';
CREATE DATABASE dealers OWNER dealers;
