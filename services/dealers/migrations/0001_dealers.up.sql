-- Dealers (vendors): a business profile a user created, and its
-- applications for a table at a convention. User ids refer to the users
-- service; this database never joins users. Options, products and areas are
-- small documents rendered as they are stored (decision 0078).
CREATE TABLE dealers (
    id              bigint      PRIMARY KEY CHECK (id > 0),
    user_id         bigint      NOT NULL CHECK (user_id > 0),
    name            text        NOT NULL CHECK (name <> ''),
    email           text,
    address_line1   text        NOT NULL,
    address_line2   text,
    address_city    text        NOT NULL,
    address_zipcode text        NOT NULL,
    address_state   text        NOT NULL,
    address_country text        NOT NULL CHECK (address_country ~ '^[A-Z]{2}$'),
    options         jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(options) = 'array'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- filter.userIds: a user's dealers, in id order.
CREATE INDEX dealers_user_id ON dealers (user_id, id);

-- One application per dealer, convention and area (the fixture's id is
-- the application's identity). The search shows those of the deployment's
-- convention.
CREATE TABLE dealer_applications (
    id                   bigint      PRIMARY KEY CHECK (id > 0),
    dealer_id            bigint      NOT NULL REFERENCES dealers (id) ON DELETE CASCADE,
    convention_id        text        NOT NULL CHECK (convention_id <> ''),
    status               text        NOT NULL CHECK (status IN ('pending', 'waitlisted', 'approved', 'rejected', 'cancelled')),
    special_requests     text,
    table_number         text,
    dealer_request_types jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(dealer_request_types) = 'array'),
    table_type           jsonb       NOT NULL CHECK (jsonb_typeof(table_type) = 'object'),
    area_id              bigint      NOT NULL CHECK (area_id > 0),
    area_name            text        NOT NULL CHECK (area_name <> ''),
    options              jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(options) = 'array'),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- A page's applications: those of the page's dealers in one convention.
CREATE INDEX dealer_applications_dealer ON dealer_applications (dealer_id, convention_id, id);
