-- The algorithm of the client's OpenID Connect ID tokens
-- (id_token_signed_response_alg of OpenID Connect Dynamic Client
-- Registration): RS256 unless the client was registered for ES256.
ALTER TABLE clients ADD COLUMN id_token_alg TEXT NOT NULL DEFAULT 'RS256'
    CHECK (id_token_alg IN ('RS256', 'ES256'));
