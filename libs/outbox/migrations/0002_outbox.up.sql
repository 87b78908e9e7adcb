-- The transactional outbox (libs/outbox): events committed with the change
-- they describe, relayed to auth by the serve process, then deleted. Events
-- of one resource are relayed in id order, which is their commit order.
CREATE TABLE outbox (
    id          bigserial   PRIMARY KEY,
    -- COPY (bulk imports) leaves event_id out: one per row.
    event_id    uuid        NOT NULL DEFAULT gen_random_uuid(),
    type        text        NOT NULL,
    resource    text        NOT NULL,
    -- A snapshot of the object as committed; the relay renders it as the
    -- read API renders the object.
    payload     jsonb       NOT NULL,
    -- W3C trace context of the change's request or command.
    traceparent text,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Events the relay could not render (a payload a release cannot decode),
-- set aside so that they do not block the others; an operator inspects them
-- and may move them back into outbox once a fixed release can render them.
CREATE TABLE outbox_dead (
    id          bigint      PRIMARY KEY,
    event_id    uuid        NOT NULL,
    type        text        NOT NULL,
    resource    text        NOT NULL,
    payload     jsonb       NOT NULL,
    traceparent text,
    created_at  timestamptz NOT NULL,
    failed_at   timestamptz NOT NULL DEFAULT now(),
    error       text        NOT NULL
);
