-- Webhooks under the operator's control (issue #29): which apps may reach
-- targets inside WEBHOOK_ALLOWED_NETWORKS, and who disabled a subscription,
-- since only an operator lifts an operator's disable. Added beside what is
-- there: the previous release runs on this schema unchanged.

-- the apps an operator allowed targets inside WEBHOOK_ALLOWED_NETWORKS
-- (auth webhooks allow-private); the others reach public addresses only
CREATE TABLE webhook_private_apps (
    client_id  BIGINT PRIMARY KEY REFERENCES clients (id) ON DELETE CASCADE,
    allowed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- who disabled it: 'app' (the app itself), 'failures' (auth, after failing
-- for WEBHOOK_DISABLE_AFTER) or 'operator'; NULL while active
ALTER TABLE webhook_subscriptions ADD COLUMN disabled_by TEXT CHECK (disabled_by IN ('app', 'failures', 'operator'));
UPDATE webhook_subscriptions SET disabled_by = CASE disabled_reason
        WHEN 'disabled by an operator' THEN 'operator'
        WHEN 'disabled by the app' THEN 'app'
        ELSE 'failures' END
    WHERE state = 'disabled';
