-- This allocation database's identity. Each account's TaskChampion replica records the
-- instance and account it belongs to (`callsign_replica` inside the replica), so a replica is
-- never handed to another account: not after this file is lost and a new one is started, nor
-- after an old backup of it reuses an account id. `ready_probe` is what `/readyz` writes to
-- find out whether the database still takes writes.
CREATE TABLE server_meta (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    instance_id BLOB NOT NULL CHECK (length(instance_id) = 16),
    ready_probe INTEGER NOT NULL DEFAULT 0
);
INSERT INTO server_meta (id, instance_id) VALUES (1, randomblob(16));
