-- Webhooks under the operator's control (issue #29): who disabled a
-- subscription, since only an operator lifts an operator's disable. Added
-- beside what is there: the previous release runs on this schema unchanged.

-- who disabled it: 'app' (the app itself), 'failures' (auth, after failing
-- for WEBHOOK_DISABLE_AFTER) or 'operator'; NULL while active
ALTER TABLE webhook_subscriptions ADD COLUMN disabled_by TEXT CHECK (disabled_by IN ('app', 'failures', 'operator'));
UPDATE webhook_subscriptions SET disabled_by = CASE disabled_reason
        WHEN 'disabled by an operator' THEN 'operator'
        WHEN 'disabled by the app' THEN 'app'
        ELSE 'failures' END
    WHERE state = 'disabled';
