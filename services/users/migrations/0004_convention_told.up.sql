-- The convention (CONVENTION_ID) whose memberships count, as `users serve`
-- last saw it. When a replica starts with another one, the memberships of
-- the old convention lapse: in one transaction it records the new one and
-- writes a permissions-narrowed notice (outbox) for each of their users, so
-- that auth revokes what those memberships allowed apps to do.
CREATE TABLE convention_told (
    only_row      boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    convention_id text        NOT NULL,
    changed_at    timestamptz NOT NULL DEFAULT now()
);
