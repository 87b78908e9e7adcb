-- One registration per user and convention. User ids refer to the users
-- service; this database never joins users. Options and flags are small
-- documents rendered as they are stored.
CREATE TABLE registrations (
    convention_id        text        NOT NULL CHECK (convention_id <> ''),
    user_id              bigint      NOT NULL CHECK (user_id > 0),
    badge_name           text        NOT NULL,
    status               text        NOT NULL CHECK (status IN ('paid', 'unpaid')),
    order_id             text,
    product_id           text        NOT NULL,
    product_name         text        NOT NULL,
    product_display_name text,
    options              jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(options) = 'array'),
    flags                jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(flags) = 'array'),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    -- Keyset pagination walks this index: (convention, user id) order.
    PRIMARY KEY (convention_id, user_id)
);
