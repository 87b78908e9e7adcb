-- Where the client may send a browser back after signing the user out
-- (OpenID Connect RP-Initiated Logout's post_logout_redirect_uri), exactly.
ALTER TABLE clients ADD COLUMN post_logout_redirect_uris TEXT[] NOT NULL DEFAULT '{}';
