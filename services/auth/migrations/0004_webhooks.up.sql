-- Webhooks: apps subscribe to the events the resource services commit
-- (POST /internal/events), and auth delivers each event to every
-- subscription that lists its type, signed, retried, in order per resource.
-- New tables only: the previous release runs on this schema unchanged.

-- A subscription of an app (client) to event types at one URL.
CREATE TABLE webhook_subscriptions (
    id              UUID PRIMARY KEY,
    client_id       BIGINT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
    url             TEXT NOT NULL CHECK (length(url) <= 2048),
    events          TEXT[] NOT NULL CHECK (cardinality(events) > 0),
    description     TEXT NOT NULL DEFAULT '',
    state           TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
    -- why the subscription is disabled (by auth after failing too long, the app or an operator)
    disabled_reason TEXT,
    -- the first failed delivery since the last success (NULL while deliveries succeed)
    failing_since   TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_subscriptions_client ON webhook_subscriptions (client_id, created_at, id);

-- An event as received: id is the producer's (a batch sent again creates
-- nothing twice); seq is assigned in the order received, which is commit
-- order per resource; body is the exact request body every delivery sends.
CREATE TABLE webhook_events (
    id          UUID PRIMARY KEY,
    seq         BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    type        TEXT NOT NULL,
    source      TEXT NOT NULL,
    resource    TEXT NOT NULL,
    body        BYTEA NOT NULL,
    occurred_at TIMESTAMPTZ NOT NULL,
    traceparent TEXT NOT NULL DEFAULT '',
    received_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One event for one subscription. seq and resource are the event's, kept
-- here so that the claim finds the head of each resource's line by index.
CREATE TABLE webhook_deliveries (
    id              UUID PRIMARY KEY,
    subscription_id UUID NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    event_id        UUID NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    seq             BIGINT NOT NULL,
    resource        TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_status     INTEGER,
    last_error      TEXT,
    -- when the next attempt is due (pending only)
    next_attempt_at TIMESTAMPTZ,
    -- retries stop once this is older than WEBHOOK_RETRY_FOR: the event's
    -- time, or the replay's
    retry_from      TIMESTAMPTZ NOT NULL,
    -- a dispatcher is sending it until then (a crashed one's lease expires)
    leased_until    TIMESTAMPTZ,
    -- the claim holding the lease: a late outcome of an expired lease is dropped
    lease_id        UUID,
    -- when it was delivered or went dead
    finished_at     TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (subscription_id, seq)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (subscription_id, next_attempt_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_line ON webhook_deliveries (subscription_id, resource, seq) WHERE state = 'pending';
-- the leases a claim counts against WEBHOOK_ENDPOINT_CONCURRENCY: only the
-- deliveries in flight (or left by a crashed dispatcher), never the backlog
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (subscription_id, leased_until)
    WHERE state = 'pending' AND leased_until IS NOT NULL;
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (state, finished_at) WHERE state <> 'pending';
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (subscription_id, state, seq);
