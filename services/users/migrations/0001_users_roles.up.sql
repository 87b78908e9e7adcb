-- Users, roles and role membership.

CREATE TABLE users (
    id                  bigint PRIMARY KEY CHECK (id > 0),
    username            text    NOT NULL CHECK (username <> '' AND position('@' in username) = 0),
    email               text    NOT NULL CHECK (position('@' in email) > 1),
    -- argon2id in PHC string format; NULL: the user cannot log in.
    password_hash       text,
    email_verified      boolean NOT NULL DEFAULT false,
    identity_verified   boolean NOT NULL DEFAULT false,
    first_name          text    NOT NULL,
    last_name           text    NOT NULL,
    preferred_name      text,
    born_at             date    NOT NULL,
    phone               text,
    newsletter          boolean NOT NULL DEFAULT false,
    profile_picture_url text,
    -- The address is present when address_line1 is not NULL.
    address_line1       text,
    address_line2       text,
    address_city        text,
    address_state       text,
    address_zipcode     text,
    address_country     text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- Lookups by email (search filter, login) and by username (login) ignore case;
-- both are unique so that a login names exactly one user.
CREATE UNIQUE INDEX users_email_lower_key ON users (lower(email));
CREATE UNIQUE INDEX users_username_lower_key ON users (lower(username));

CREATE TABLE roles (
    id          bigint PRIMARY KEY CHECK (id > 0),
    name        text   NOT NULL CHECK (name <> ''),
    permissions text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX roles_name_key ON roles (name);

-- A membership is global (convention_id = '') or for one convention.
CREATE TABLE role_members (
    role_id       bigint NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    user_id       bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    convention_id text   NOT NULL,
    granted_at    timestamptz NOT NULL DEFAULT now(),
    -- (role_id, user_id) leads: the members of a role in user-id order, which
    -- is what a keyset page of the search by role walks.
    PRIMARY KEY (role_id, user_id, convention_id)
);
-- The roles of a user (current-user view, role list, permissions).
CREATE INDEX role_members_user_idx ON role_members (user_id, role_id);
