-- Whether the client must send PKCE (a code_challenge) at /oauth/authorize.
-- Clients registered before this migration keep working without PKCE
-- (false); clients registered from now on require it unless registered
-- otherwise (the default true).
ALTER TABLE clients ADD COLUMN require_pkce BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE clients ALTER COLUMN require_pkce SET DEFAULT true;
