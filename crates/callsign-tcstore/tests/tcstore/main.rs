//! `InlineStorage` against TaskChampion's own `SqliteStorage`: the same operations give the same
//! replica, each can read the other's file, a dropped transaction leaves nothing, and a write by
//! another connection is seen (the cached working set is not trusted after it).
use std::collections::HashMap;
use std::path::Path;

use callsign_tcstore::InlineStorage;
use taskchampion::storage::{AccessMode, Storage};
use taskchampion::{Operation, Operations, Replica, SqliteStorage, TaskData};
use tempfile::TempDir;
use uuid::Uuid;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// A small deterministic generator (xorshift64*), so a failing sequence replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

async fn sqlite(dir: &Path) -> Result<Replica<SqliteStorage>> {
    Ok(Replica::new(
        SqliteStorage::new(dir, AccessMode::ReadWrite, true).await?,
    ))
}

async fn inline(dir: &Path) -> Result<Replica<InlineStorage>> {
    Ok(Replica::new(InlineStorage::open(dir).await?))
}

/// Everything a replica holds that a reader can see.
#[derive(Debug, PartialEq)]
struct View {
    tasks: HashMap<Uuid, Vec<(String, String)>>,
    working_set: Vec<(usize, Uuid)>,
    operations: HashMap<Uuid, Operations>,
    local_operations: usize,
    undo: Operations,
}

async fn view<S: Storage>(r: &mut Replica<S>) -> Result<View> {
    let mut tasks = HashMap::new();
    let mut operations = HashMap::new();
    for (uuid, t) in r.all_task_data().await? {
        let mut props: Vec<(String, String)> =
            t.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        props.sort();
        tasks.insert(uuid, props);
        operations.insert(uuid, r.get_task_operations(uuid).await?);
    }
    Ok(View {
        tasks,
        working_set: r.working_set().await?.iter().collect(),
        operations,
        local_operations: r.num_local_operations().await?,
        undo: r.get_undo_operations().await?,
    })
}

/// TaskChampion's `status` values.
const STATUSES: [&str; 4] = ["pending", "completed", "deleted", "recurring"];

/// One random batch of operations, built against the current content of `r`.
async fn batch<S: Storage>(
    r: &mut Replica<S>,
    uuids: &mut Vec<Uuid>,
    rng: &mut Rng,
) -> Result<Operations> {
    let mut ops = vec![Operation::UndoPoint];
    for _ in 0..1 + rng.below(6) {
        let pick = if uuids.is_empty() { 0 } else { rng.below(10) };
        match pick {
            0..=3 => {
                let uuid = Uuid::new_v4();
                let mut t = TaskData::create(uuid, &mut ops);
                t.update(
                    "description",
                    Some(format!("task {}", uuids.len())),
                    &mut ops,
                );
                // Mostly pending; some start outside the working set and may join it later.
                let status = match rng.below(4) {
                    0 => STATUSES[rng.below(STATUSES.len())],
                    _ => "pending",
                };
                t.update("status", Some(status.into()), &mut ops);
                uuids.push(uuid);
            }
            4..=7 => {
                let uuid = uuids[rng.below(uuids.len())];
                if let Some(mut t) = r.get_task_data(uuid).await? {
                    let status = STATUSES[rng.below(STATUSES.len())].to_string();
                    t.update("status", Some(status), &mut ops);
                    t.update("project", Some(format!("p{}", rng.below(4))), &mut ops);
                    if rng.below(3) == 0 {
                        t.update("project", None, &mut ops);
                    }
                }
            }
            _ => {
                let uuid = uuids[rng.below(uuids.len())];
                if let Some(mut t) = r.get_task_data(uuid).await? {
                    t.delete(&mut ops);
                }
            }
        }
    }
    Ok(ops)
}

#[tokio::test]
async fn the_same_operations_give_the_same_replica_as_taskchampions_storage() -> Result<()> {
    for seed in [1u64, 7, 42, 1234] {
        let (a_dir, b_dir) = (TempDir::new()?, TempDir::new()?);
        let mut theirs = sqlite(a_dir.path()).await?;
        let mut ours = inline(b_dir.path()).await?;
        let mut rng = Rng(seed);
        let mut uuids = Vec::new();
        for step in 0..60 {
            let ops = batch(&mut theirs, &mut uuids, &mut rng).await?;
            theirs.commit_operations(ops.clone()).await?;
            ours.commit_operations(ops).await?;
            match rng.below(12) {
                0 => {
                    theirs.rebuild_working_set(true).await?;
                    ours.rebuild_working_set(true).await?;
                }
                1 => {
                    theirs.rebuild_working_set(false).await?;
                    ours.rebuild_working_set(false).await?;
                }
                2 => {
                    let undo = theirs.get_undo_operations().await?;
                    assert_eq!(undo, ours.get_undo_operations().await?);
                    // TaskChampion refuses some undos (a task the undo needs is gone): both
                    // storages must answer alike, and keep nothing of a refused one.
                    let a = theirs.commit_reversed_operations(undo.clone()).await;
                    let b = ours.commit_reversed_operations(undo).await;
                    let show = |r: std::result::Result<bool, taskchampion::Error>| {
                        r.map_err(|e| e.to_string())
                    };
                    assert_eq!(show(a), show(b), "seed {seed} step {step}: undo result");
                }
                _ => {}
            }
            assert_eq!(
                view(&mut theirs).await?,
                view(&mut ours).await?,
                "seed {seed} step {step}"
            );
        }
        // Reopened from disk, each still shows the same.
        drop((theirs, ours));
        let (mut theirs, mut ours) = (sqlite(a_dir.path()).await?, inline(b_dir.path()).await?);
        assert_eq!(
            view(&mut theirs).await?,
            view(&mut ours).await?,
            "seed {seed} reopened"
        );
    }
    Ok(())
}

#[tokio::test]
async fn taskchampions_storage_reads_the_file_this_one_wrote_and_back() -> Result<()> {
    let dir = TempDir::new()?;
    let mut rng = Rng(99);
    let mut uuids = Vec::new();
    let mut ours = inline(dir.path()).await?;
    for _ in 0..20 {
        let ops = batch(&mut ours, &mut uuids, &mut rng).await?;
        ours.commit_operations(ops).await?;
    }
    let written = view(&mut ours).await?;
    assert!(!written.tasks.is_empty() && !written.working_set.is_empty());
    drop(ours);

    let mut theirs = sqlite(dir.path()).await?;
    assert_eq!(
        view(&mut theirs).await?,
        written,
        "TaskChampion reads what was written"
    );
    for _ in 0..20 {
        let ops = batch(&mut theirs, &mut uuids, &mut rng).await?;
        theirs.commit_operations(ops).await?;
    }
    let then = view(&mut theirs).await?;
    drop(theirs);
    assert_eq!(
        view(&mut inline(dir.path()).await?).await?,
        then,
        "and the other way"
    );
    Ok(())
}

#[tokio::test]
async fn a_write_by_another_connection_is_seen_by_the_cached_working_set() -> Result<()> {
    let dir = TempDir::new()?;
    let mut ours = inline(dir.path()).await?;
    let create = |ops: &mut Operations| {
        let mut t = TaskData::create(Uuid::new_v4(), ops);
        t.update("status", Some("pending".into()), ops);
        t.get_uuid()
    };
    let mut ops = Operations::new();
    let first = create(&mut ops);
    ours.commit_operations(ops).await?;
    assert_eq!(ours.working_set().await?.by_uuid(first), Some(1));

    // Taskwarrior (TaskChampion's storage, its own connection) adds a task while ours is open.
    let mut other = sqlite(dir.path()).await?;
    let mut ops = Operations::new();
    let second = create(&mut ops);
    other.commit_operations(ops).await?;

    let mut ops = Operations::new();
    let third = create(&mut ops);
    ours.commit_operations(ops).await?;
    let ws = ours.working_set().await?;
    assert_eq!(
        (ws.by_uuid(first), ws.by_uuid(second), ws.by_uuid(third)),
        (Some(1), Some(2), Some(3)),
        "no working-set index given twice"
    );
    assert_eq!(view(&mut other).await?, view(&mut ours).await?);
    Ok(())
}

#[tokio::test]
async fn a_dropped_transaction_leaves_nothing_not_even_in_the_cached_working_set() -> Result<()> {
    let dir = TempDir::new()?;
    let mut storage = InlineStorage::open(dir.path()).await?;
    let kept = Uuid::new_v4();
    {
        let mut txn = storage.txn().await?;
        txn.create_task(kept).await?;
        assert_eq!(txn.add_to_working_set(kept).await?, 1);
        txn.commit().await?;
    }
    let lost = Uuid::new_v4();
    {
        let mut txn = storage.txn().await?;
        assert!(txn.create_task(lost).await?);
        assert_eq!(txn.add_to_working_set(lost).await?, 2);
        txn.add_operation(Operation::Create { uuid: lost }).await?;
        // dropped without commit
    }
    let mut txn = storage.txn().await?;
    assert_eq!(txn.get_task(lost).await?, None);
    assert_eq!(txn.get_working_set().await?, vec![None, Some(kept)]);
    assert_eq!(txn.num_unsynced_operations().await?, 0);
    assert_eq!(txn.add_to_working_set(lost).await?, 2);
    txn.commit().await?;
    assert!(txn.commit().await.is_err(), "a second commit is refused");
    Ok(())
}

#[tokio::test]
async fn sync_bookkeeping_matches_taskchampion() -> Result<()> {
    let (a_dir, b_dir) = (TempDir::new()?, TempDir::new()?);
    let mut theirs = SqliteStorage::new(a_dir.path(), AccessMode::ReadWrite, true).await?;
    let mut ours = InlineStorage::open(b_dir.path()).await?;
    let (kept, gone) = (Uuid::new_v4(), Uuid::new_v4());
    let version = Uuid::new_v4();
    for s in [&mut theirs as &mut dyn Storage, &mut ours] {
        let mut txn = s.txn().await?;
        assert_eq!(txn.base_version().await?, Uuid::nil());
        assert!(txn.is_empty().await?);
        for u in [kept, gone] {
            txn.create_task(u).await?;
            txn.add_operation(Operation::Create { uuid: u }).await?;
        }
        txn.delete_task(gone).await?;
        txn.set_base_version(version).await?;
        assert_eq!(txn.num_unsynced_operations().await?, 2);
        // The last operation is removed only when it matches.
        assert!(txn
            .remove_operation(Operation::Create { uuid: kept })
            .await
            .is_err());
        txn.remove_operation(Operation::Create { uuid: gone })
            .await?;
        txn.add_operation(Operation::Create { uuid: gone }).await?;
        txn.sync_complete().await?;
        txn.commit().await?;
    }
    for s in [&mut theirs as &mut dyn Storage, &mut ours] {
        let mut txn = s.txn().await?;
        assert_eq!(txn.base_version().await?, version);
        assert_eq!(txn.num_unsynced_operations().await?, 0);
        assert_eq!(
            txn.get_task_operations(kept).await?,
            vec![Operation::Create { uuid: kept }]
        );
        assert_eq!(
            txn.get_task_operations(gone).await?,
            vec![],
            "orphans dropped at sync"
        );
        assert_eq!(txn.all_task_uuids().await?, vec![kept]);
    }
    Ok(())
}

#[tokio::test]
async fn the_direct_path_leaves_the_file_as_replica_commit_operations_does() -> Result<()> {
    for seed in [3u64, 8, 99] {
        let (a_dir, b_dir) = (TempDir::new()?, TempDir::new()?);
        let mut theirs = sqlite(a_dir.path()).await?;
        let mut ours = InlineStorage::open(b_dir.path()).await?;
        let mut rng = Rng(seed);
        let mut uuids = Vec::new();
        for step in 0..60 {
            let ops = batch(&mut theirs, &mut uuids, &mut rng).await?;
            theirs.commit_operations(ops.clone()).await?;
            if step % 7 == 6 {
                // Taskwarrior writes into our file between two of our commits.
                sqlite(b_dir.path()).await?.commit_operations(ops).await?;
            } else {
                ours.commit_operations(ops)?;
            }
            for &u in &uuids {
                assert_eq!(
                    theirs.get_task_data(u).await?,
                    ours.get_task_data(u)?,
                    "seed {seed} step {step}: task {u}"
                );
            }
            if step % 5 == 4 {
                let mut reader = sqlite(b_dir.path()).await?;
                assert_eq!(
                    view(&mut theirs).await?,
                    view(&mut reader).await?,
                    "seed {seed} step {step}"
                );
            }
        }
    }
    Ok(())
}

/// A fresh replica in a temp dir with one pending task, committed.
async fn one_pending_task() -> Result<(TempDir, InlineStorage, TaskData)> {
    let dir = TempDir::new()?;
    let mut ours = InlineStorage::open(dir.path()).await?;
    let mut ops = Operations::new();
    let mut t = TaskData::create(Uuid::new_v4(), &mut ops);
    t.update("status", Some("pending".into()), &mut ops);
    ours.commit_operations(ops)?;
    Ok((dir, ours, t))
}

#[tokio::test]
async fn a_failed_direct_commit_keeps_nothing() -> Result<()> {
    let (dir, mut ours, _) = one_pending_task().await?;

    // Another connection holds the write lock past the busy timeout: the commit fails whole.
    let blocker = rusqlite::Connection::open(dir.path().join(callsign_tcstore::FILE_NAME))?;
    blocker.execute_batch("BEGIN IMMEDIATE")?;
    let mut ops = Operations::new();
    let lost = Uuid::new_v4();
    let mut t = TaskData::create(lost, &mut ops);
    t.update("status", Some("pending".into()), &mut ops);
    let started = std::time::Instant::now();
    assert!(ours.commit_operations(ops.clone()).is_err());
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(4),
        "it waited for the lock"
    );
    blocker.execute_batch("ROLLBACK")?;
    assert_eq!(ours.get_task_data(lost)?, None);

    // The next commit gives the next working-set index, not one past the failed attempt.
    ours.commit_operations(ops)?;
    drop(ours);
    let mut reader = sqlite(dir.path()).await?;
    assert_eq!(reader.working_set().await?.by_uuid(lost), Some(2));
    assert_eq!(reader.num_local_operations().await?, 4);
    Ok(())
}

/// A replica whose log was trimmed, restated for a sync server: its unsynced operations alone
/// rebuild every task as it is, and [`InlineStorage::operations_after`] names the tasks of the
/// operations after a point. Once it has a base version, a trim keeps what is not sent yet.
#[tokio::test]
async fn a_restated_log_rebuilds_every_task_and_a_syncing_replica_keeps_unsent_operations(
) -> Result<()> {
    let (ours_dir, fresh_dir) = (TempDir::new()?, TempDir::new()?);
    let mut ours = inline(ours_dir.path()).await?;
    let (mut rng, mut uuids) = (Rng(7), Vec::new());
    for _ in 0..20 {
        let ops = batch(&mut ours, &mut uuids, &mut rng).await?;
        ours.commit_operations(ops).await?;
    }
    let want: HashMap<Uuid, Vec<(String, String)>> = view(&mut ours).await?.tasks;
    drop(ours);
    let mut storage = InlineStorage::open(ours_dir.path()).await?;
    let future = chrono::Utc::now() + chrono::Duration::days(1);
    storage.trim_operations(future, 100_000)?;
    let last = storage.restate_operations(chrono::Utc::now())?;
    assert_eq!(storage.last_operation()?, last);
    assert_eq!(storage.base_version()?, None);
    let unsent = storage.unsynced_operations()?;
    let ops = {
        let mut txn = storage.txn().await?;
        txn.unsynced_operations().await?
    };
    assert_eq!(ops.len() as i64, unsent);
    assert!(ops.len() > want.len(), "a Create and updates per task");
    let mut fresh = sqlite(fresh_dir.path()).await?;
    let mut all = Operations::new();
    for op in ops {
        all.push(op);
    }
    fresh.commit_operations(all).await?;
    assert_eq!(view(&mut fresh).await?.tasks, want);

    let touched = storage.operations_after(0)?;
    assert_eq!(touched.last, last);
    let mut named: Vec<Uuid> = touched.uuids.clone();
    named.sort();
    let mut tasks: Vec<Uuid> = want.keys().copied().collect();
    tasks.sort();
    assert_eq!(named, tasks, "each task once");
    assert_eq!(storage.operations_after(last)?.uuids, Vec::<Uuid>::new());

    // With a base version nothing unsent is trimmed, however old.
    {
        let mut txn = storage.txn().await?;
        txn.set_base_version(Uuid::new_v4()).await?;
        txn.commit().await?;
    }
    assert_eq!(storage.trim_operations(future, 100_000)?, 0);
    assert_eq!(storage.unsynced_operations()?, unsent);
    Ok(())
}
