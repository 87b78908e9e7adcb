ALTER TABLE webhook_subscriptions DROP COLUMN format;
