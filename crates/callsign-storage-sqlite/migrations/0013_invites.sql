-- Invite codes: an owner makes one, a new device redeems it once with a handle of its own and
-- gets its own member and token. Only the code's SHA-256 is kept. The reaper deletes invites
-- a week after they expire.
CREATE TABLE invites (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts(id),
    code_hash   BLOB NOT NULL UNIQUE,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    made_by     INTEGER NOT NULL REFERENCES members(id),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    used_at     INTEGER,
    used_by     INTEGER REFERENCES members(id),
    CHECK ((used_at IS NULL) = (used_by IS NULL))
);
CREATE INDEX invites_by_expiry ON invites(expires_at);
