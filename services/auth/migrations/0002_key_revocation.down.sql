-- Without the column a revoked key would be published and sign again: delete it.
DELETE FROM signing_keys WHERE revoked_at IS NOT NULL;
ALTER TABLE signing_keys DROP COLUMN revoked_at;
