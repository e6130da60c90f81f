-- Teams: an account is a team of members, and every token belongs to one member.
--
-- A member's name is unique in the account for good: a removed member keeps their row (and
-- `removed_at`), so the tasks they made still name them and no one else takes the name.
-- Removing a member deletes their tokens.
CREATE TABLE members (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts(id),
    name        TEXT NOT NULL CHECK (name = lower(name) AND length(name) BETWEEN 1 AND 32),
    role        TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    created_at  INTEGER NOT NULL,
    removed_at  INTEGER,
    UNIQUE (account_id, name)
);

-- Every existing account gets its first member, an owner named `owner`, who holds the
-- account's existing tokens.
INSERT INTO members (account_id, name, role, created_at)
    SELECT id, 'owner', 'owner', created_at FROM accounts;
ALTER TABLE tokens ADD COLUMN member_id INTEGER REFERENCES members(id);
UPDATE tokens SET member_id = (SELECT m.id FROM members m WHERE m.account_id = tokens.account_id);
CREATE INDEX tokens_by_member ON tokens(member_id);
