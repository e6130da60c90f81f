-- The task store on PostgreSQL (src/pg/tasks.rs): TaskChampion's replica model, one replica per
-- account, in the tables TaskChampion's own SqliteStorage has (tasks, operations, working_set,
-- sync_meta), each keyed by account. Encodings are TaskChampion's: a task is its TaskMap as a
-- JSON object of strings, an operation is taskchampion::Operation as serde writes it.
--
-- Every write to an account's rows runs in one transaction that first takes
-- pg_advisory_xact_lock(TASKS_LOCK, account) (two-key form; see tasks.rs), so one account's
-- operations are applied, numbered and logged by one transaction at a time, on any node.
--
-- No foreign key to accounts(id): checking one takes a KEY SHARE lock on the account's row,
-- which the allocation store's phase 2 holds FOR UPDATE, so every task-store write of an
-- account would wait for that account's key commits.

-- The tasks: TaskChampion's `tasks (uuid, data)`.
CREATE TABLE tc_tasks (
    account_id  bigint NOT NULL,
    uuid        uuid NOT NULL,
    data        jsonb NOT NULL CHECK (jsonb_typeof(data) = 'object'),
    PRIMARY KEY (account_id, uuid)
);

-- The operations log, in commit order per account (id; a later commit of an account has larger
-- ids, as its transactions are serialized by the lock). `uuid` is the task an operation is
-- about (NULL for an UndoPoint), for TaskChampion's get_task_operations; `synced` is
-- TaskChampion's flag for operations a sync has sent.
CREATE TABLE tc_operations (
    account_id  bigint NOT NULL,
    id          bigserial NOT NULL,
    uuid        uuid,
    data        jsonb NOT NULL,
    synced      boolean NOT NULL DEFAULT false,
    -- Milliseconds since the Unix epoch, as the allocation tables keep times.
    created_at  bigint NOT NULL,
    PRIMARY KEY (account_id, id)
);
CREATE INDEX tc_operations_by_task ON tc_operations (account_id, uuid);
CREATE INDEX tc_operations_unsynced ON tc_operations (account_id, id) WHERE NOT synced;

-- The working set: index `id` (1, 2, ...; gaps allowed, as TaskChampion leaves them) to task.
-- A task is in it at most once, but that is not a UNIQUE constraint: TaskChampion's renumbering
-- rebuild moves a task to a lower index before it clears the higher one, inside one transaction.
CREATE TABLE tc_working_set (
    account_id  bigint NOT NULL,
    id          integer NOT NULL CHECK (id >= 1),
    uuid        uuid NOT NULL,
    PRIMARY KEY (account_id, id)
);
CREATE INDEX tc_working_set_by_task ON tc_working_set (account_id, uuid);

-- TaskChampion's sync_meta: the version the replica last synced to. No row: never synced
-- (TaskChampion's nil version).
CREATE TABLE tc_sync_meta (
    account_id    bigint PRIMARY KEY,
    base_version  uuid NOT NULL
);
