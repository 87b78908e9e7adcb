-- A revoked signing key is never published and never signs again
-- (`auth keys revoke`); the row stays so that the kid is not reused.
ALTER TABLE signing_keys ADD COLUMN revoked_at TIMESTAMPTZ;
