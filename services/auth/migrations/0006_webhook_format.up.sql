-- The shape of a subscription's delivery tokens (decision 0098): 'eventreg'
-- (aud the app's client id, 5 minutes) or 'concat' (the real API's documented
-- shape: aud the subscription's URL, 120 seconds). Added with a default: the
-- previous release runs on this schema unchanged.
ALTER TABLE webhook_subscriptions ADD COLUMN format TEXT NOT NULL DEFAULT 'eventreg'
    CHECK (format IN ('eventreg', 'concat'));
