-- The public configuration (GET /api/config): the organization a deployment
-- serves and its conventions, filled by `registrations import` from a
-- fixture's organization and conventions sections.

-- One row: a deployment serves one organization.
CREATE TABLE organization (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    name      text    NOT NULL CHECK (name <> ''),
    country   text    NOT NULL CHECK (country ~ '^[A-Z]{2}$')
);

CREATE TABLE conventions (
    id        text        PRIMARY KEY CHECK (id <> ''),
    name      text        NOT NULL CHECK (name <> ''),
    long_name text        NOT NULL CHECK (long_name <> ''),
    domain    text        NOT NULL CHECK (domain <> ''),
    start_at  timestamptz NOT NULL,
    end_at    timestamptz NOT NULL CHECK (end_at >= start_at),
    -- IANA zone: the API renders start_at and end_at with its offset.
    time_zone text        NOT NULL CHECK (time_zone <> ''),
    venue     text        NOT NULL
);

-- A user's orders (GET /api/v0/users/{id}/orders) across conventions: the
-- registrations an order paid, found by user without a scan.
CREATE INDEX registrations_orders_by_user ON registrations (user_id) WHERE order_id IS NOT NULL;
