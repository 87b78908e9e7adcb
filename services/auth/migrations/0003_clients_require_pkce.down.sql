ALTER TABLE clients DROP COLUMN require_pkce;
