ALTER TABLE webhook_subscriptions DROP COLUMN disabled_by;
DROP TABLE webhook_private_apps;
