-- What one account sees must not count another's activity (issue 20).
-- Projects get a number per account, shown to clients as the project's id; the row id stays
-- internal. Existing projects are numbered in the order they were made.
ALTER TABLE projects ADD COLUMN number INTEGER CHECK (number >= 1);
UPDATE projects SET number = (
    SELECT COUNT(*) FROM projects p WHERE p.account_id = projects.account_id AND p.id <= projects.id
);
CREATE UNIQUE INDEX projects_number ON projects(account_id, number);
-- The key that enciphers change-feed cursors (`cursor.rs`): clients see the feed's sequence
-- number only enciphered, and only for their account.
ALTER TABLE server_meta ADD COLUMN cursor_key BLOB;
UPDATE server_meta SET cursor_key = randomblob(32);
