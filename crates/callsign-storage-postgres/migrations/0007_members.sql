-- Teams: an account is a team of members, and every token belongs to one member (as
-- migrations/0012_members.sql on SQLite). A member's name is the account's for good; removing
-- a member keeps the row (removed_at) and deletes their tokens.
CREATE TABLE members (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts(id),
    name        text NOT NULL CHECK (name = lower(name) AND length(name) BETWEEN 1 AND 32),
    role        text NOT NULL CHECK (role IN ('owner', 'member')),
    created_at  bigint NOT NULL,
    removed_at  bigint,
    UNIQUE (account_id, name)
);

-- Every existing account gets its first member, an owner named `owner`, who holds the
-- account's existing tokens.
INSERT INTO members (account_id, name, role, created_at)
    SELECT id, 'owner', 'owner', created_at FROM accounts;
ALTER TABLE tokens ADD COLUMN member_id bigint REFERENCES members(id);
UPDATE tokens t SET member_id = m.id FROM members m WHERE m.account_id = t.account_id;
ALTER TABLE tokens ALTER COLUMN member_id SET NOT NULL;
CREATE INDEX tokens_by_member ON tokens (member_id);
