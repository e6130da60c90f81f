-- Invite codes (as migrations/0013_invites.sql on SQLite): single use, until they expire; only
-- the code's SHA-256 is kept; the reaper deletes them a week after they expire.
CREATE TABLE invites (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts(id),
    code_hash   bytea NOT NULL UNIQUE,
    role        text NOT NULL CHECK (role IN ('owner', 'member')),
    made_by     bigint NOT NULL REFERENCES members(id),
    created_at  bigint NOT NULL,
    expires_at  bigint NOT NULL,
    used_at     bigint,
    used_by     bigint REFERENCES members(id),
    CHECK ((used_at IS NULL) = (used_by IS NULL))
);
CREATE INDEX invites_by_expiry ON invites (expires_at);
