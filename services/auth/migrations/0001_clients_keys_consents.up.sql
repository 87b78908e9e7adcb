-- OAuth clients (apps). The secret is stored only as an HMAC-SHA256 keyed hash.
CREATE TABLE clients (
    id            BIGINT PRIMARY KEY CHECK (id > 0),
    name          TEXT NOT NULL CHECK (name <> ''),
    description   TEXT NOT NULL DEFAULT '',
    kind          TEXT NOT NULL CHECK (kind IN ('obo', 'service')),
    secret_hash   BYTEA NOT NULL,
    redirect_uris TEXT[] NOT NULL DEFAULT '{}',
    scopes        TEXT[] NOT NULL DEFAULT '{}',
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Server-assigned ids of `auth clients create` continue after fixture ids.
CREATE SEQUENCE clients_id_seq START 1000 OWNED BY clients.id;

-- Signing keys. The private key is AES-256-GCM encrypted with the
-- key-encryption key; the public JWK is stored in the clear for the JWKS.
CREATE TABLE signing_keys (
    kid          TEXT PRIMARY KEY,
    alg          TEXT NOT NULL,
    public_jwk   JSONB NOT NULL,
    private_enc  BYTEA NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- the key may sign from this moment (it is published before)
    activates_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX signing_keys_activates_at ON signing_keys (activates_at);

-- Consent a user gave an app: the scopes granted and the app's approved
-- scopes at that time (a change of the app's scopes asks again).
CREATE TABLE consents (
    user_id       BIGINT NOT NULL,
    client_id     BIGINT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
    scopes        TEXT[] NOT NULL,
    client_scopes TEXT[] NOT NULL,
    granted_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, client_id)
);
CREATE INDEX consents_client ON consents (client_id);
