-- Callsign client store, version 10. Never edit a shipped migration: add the next file.

-- An imported task's origin as the server reports it (`callsign_core::dto::Origin` as JSON:
-- its tracker and the key it had there), and that key as `Origin::normal_key` writes it
-- (`eng 42` is `ENG-42`, `#12` stays `#12`): the key keeps naming the task here, before the
-- server has numbered it too. Both NULL for a task that was not imported; `origin_key` is NULL
-- also for an origin without a key (a Taskwarrior task). Not unique: the server decides which
-- task an origin key belongs to (`409 already_imported`), and a refused duplicate may wait
-- here beside the task the server kept.
ALTER TABLE tasks ADD COLUMN origin TEXT CHECK (origin IS NULL OR json_valid(origin));
ALTER TABLE tasks ADD COLUMN origin_key TEXT CHECK (origin_key IS NULL OR origin IS NOT NULL);
CREATE INDEX tasks_by_origin_key ON tasks (origin_key) WHERE origin_key IS NOT NULL;
