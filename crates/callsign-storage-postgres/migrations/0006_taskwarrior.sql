-- Taskwarrior sync (src/taskwarrior): each linked account's TaskChampion client id and sealed
-- secret, and TaskChampion's sync-protocol data (a chain of versions and the latest snapshot
-- per client id), as the SQLite data dir keeps them in taskwarrior.sqlite3.

CREATE TABLE tw_links (
    account_id  bigint PRIMARY KEY,
    client_id   uuid NOT NULL UNIQUE,
    -- The encryption secret, sealed under the server key (--taskwarrior-key-file).
    secret      bytea NOT NULL,
    created_at  bigint NOT NULL,
    -- The last operation of the account's replica (tc_operations.id) the server has settled;
    -- NULL until the replica first joins the chain.
    applied_op  bigint
);

CREATE TABLE tw_clients (
    client_id               uuid PRIMARY KEY,
    latest_version_id       uuid NOT NULL,
    snapshot_version_id     uuid,
    snapshot_timestamp      bigint,
    versions_since_snapshot integer,
    snapshot                bytea
);

CREATE TABLE tw_versions (
    version_id        uuid PRIMARY KEY,
    client_id         uuid NOT NULL,
    parent_version_id uuid NOT NULL,
    history_segment   bytea NOT NULL,
    -- One child per version: a second push on the same parent is refused.
    UNIQUE (client_id, parent_version_id)
);
