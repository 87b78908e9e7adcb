-- Departments belong to the organization (every convention); their leads are
-- user ids of the users service (this database never joins users).
CREATE TABLE departments (
    id               bigint      PRIMARY KEY CHECK (id > 0),
    name             text        NOT NULL,
    email            text        NOT NULL,
    publicly_visible boolean     NOT NULL,
    leads            bigint[]    NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
-- "Does this user lead a department?" for the users service.
CREATE INDEX departments_leads ON departments USING gin (leads);

-- One volunteer application per user and convention. departments holds the
-- volunteer's choices [{"id": 10, "states": [...]}]; names are joined from
-- departments when read.
CREATE TABLE volunteers (
    convention_id   text        NOT NULL CHECK (convention_id <> ''),
    user_id         bigint      NOT NULL CHECK (user_id > 0),
    contact_methods jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(contact_methods) = 'array'),
    departments     jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(departments) = 'array'),
    options         jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(options) = 'array'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    -- Keyset pagination walks this index: (convention, user id) order.
    PRIMARY KEY (convention_id, user_id)
);
