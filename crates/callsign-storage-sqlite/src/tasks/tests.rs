//! The task store's tests, through its handle and the commands the worker takes.
use std::time::Duration;

use callsign_core::dto::TaskStatus;
use callsign_core::Priority;
use callsign_storage::model::{self, Group};
use callsign_storage::TaskStore as _;
use callsign_tcstore::InlineStorage;
use chrono::Utc;

use super::*;

fn new_task(description: &str) -> NewTask {
    NewTask::new("SYN", description)
}

/// `due` and `priority` are written as Taskwarrior writes them: Unix seconds and `H`/`M`/`L`;
/// a patch's `null` removes the property.
#[test]
fn due_and_priority_are_taskwarrior_properties() {
    use chrono::TimeZone;
    let u = Uuid::new_v4();
    let mut body = new_task("pay rent");
    body.due = Some(Utc.with_ymd_and_hms(2026, 12, 1, 9, 30, 0).unwrap());
    body.priority = Some(Priority::H);
    let mut g = Group::default();
    model::create(&mut g, vec![(u, body)]);
    let t = g.tasks[&u].as_ref().unwrap();
    assert_eq!(t.get("due"), Some("1796117400"));
    assert_eq!(t.get("priority"), Some("H"));
    let patch = TaskPatch {
        due: Some(None),
        priority: Some(Some(Priority::L)),
        ..TaskPatch::default()
    };
    model::update(&mut g, vec![(u, patch)]);
    let t = g.tasks[&u].as_ref().unwrap();
    assert_eq!((t.get("due"), t.get("priority")), (None, Some("L")));
    // A priority Taskwarrior allows by configuration but the API does not name reads as none.
    let mut t = t.clone();
    t.update("priority", Some("X".into()), &mut g.ops);
    assert_eq!(Snapshot::of(&t).priority, None);
}

/// A command that holds the worker while it is applied: (it, "it is applied now", release).
fn hold() -> (
    Cmd,
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
) {
    let (applying_tx, applying) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    (Cmd::Hold(applying_tx, release_rx), applying, release)
}

/// Two creates into account 1: `a` queued while the worker is held, so it is one group
/// with a second hold, and `b` sent while that group is applied; `meanwhile` runs just
/// before the worker is let go on. The answers of both.
async fn create_mid_group(
    store: &TaskStore,
    (a, b): (Uuid, Uuid),
    meanwhile: impl FnOnce(),
) -> (Result<Vec<Snapshot>>, Result<Vec<Snapshot>>) {
    let create = |uuid: Uuid, description: &str| {
        let (tx, rx) = oneshot::channel();
        store
            .tx
            .send(Cmd::Create(1, vec![(uuid, new_task(description))], tx))
            .unwrap();
        rx
    };
    let (hold1, applying1, release1) = hold();
    store.tx.send(hold1).unwrap();
    applying1.recv().unwrap();
    let first = create(a, "first");
    let (hold2, applying2, release2) = hold();
    store.tx.send(hold2).unwrap();
    release1.send(()).unwrap();
    applying2.recv().unwrap();
    let second = create(b, "second");
    meanwhile();
    release2.send(()).unwrap();
    (first.await.unwrap(), second.await.unwrap())
}

/// A store in a temp dir with account 1's replica open, so the groups of a test do nothing
/// but its commands.
async fn opened() -> (tempfile::TempDir, TaskStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = TaskStore::start(
        dir.path().into(),
        vec![7; 16],
        Checkpointer::start().unwrap(),
        Settings::default(),
    )
    .unwrap();
    store.get(1, vec![Uuid::new_v4()]).await.unwrap();
    (dir, store)
}

/// A replica made before bindings existed is bound to the account that opens it first;
/// from then on it opens only for that account of that allocation database.
#[tokio::test]
async fn a_replica_is_bound_on_first_open_and_refused_to_anyone_else() {
    let dir = tempfile::tempdir().unwrap();
    let replica_dir = dir.path().join("accounts/1");
    std::fs::create_dir_all(&replica_dir).unwrap();
    drop(InlineStorage::open(&replica_dir).await.unwrap());
    let file = replica_dir.join(callsign_tcstore::FILE_NAME);
    let ours = vec![1u8; 16];
    bind_replica(&file, &ours, 1).unwrap();
    bind_replica(&file, &ours, 1).unwrap();
    let other_db = bind_replica(&file, &[2u8; 16], 1).unwrap_err();
    assert!(
        matches!(
            other_db,
            StoreError::Foreign {
                account: 1,
                found_account: 1,
                ..
            }
        ),
        "{other_db:?}"
    );
    let other_account = bind_replica(&file, &ours, 2).unwrap_err();
    assert!(matches!(
        other_account,
        StoreError::Foreign {
            found_account: 1,
            ..
        }
    ));

    let store = TaskStore::start(
        dir.path().into(),
        vec![2u8; 16],
        Checkpointer::start().unwrap(),
        Settings::default(),
    )
    .unwrap();
    let refused = store.get(1, vec![Uuid::new_v4()]).await.unwrap_err();
    assert!(matches!(refused, StoreError::Foreign { .. }), "{refused:?}");
    assert!(refused.to_string().contains(&file.display().to_string()));
}

/// A create sent while the worker applies a group's commands joins that group's commit
/// instead of waiting for the next one.
#[tokio::test]
async fn a_command_sent_while_a_group_is_applied_joins_its_commit() {
    let (_dir, store) = opened().await;
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let (first, second) = create_mid_group(&store, (a, b), || {}).await;
    first.unwrap();
    second.unwrap();
    let commits = store.group_commits();
    assert_eq!(commits.commits.get(), 1, "both creates in one commit");
    assert_eq!(commits.jobs.get(), 2);
    let got = store.get(1, vec![a, b]).await.unwrap();
    assert!(got.iter().all(Option::is_some), "both tasks stored");
}

/// G3 for a command that joined late: when the group's commit fails, it is answered with
/// the error like the rest of the group, and none of the group is stored.
#[tokio::test]
async fn a_command_that_joined_a_group_whose_commit_fails_gets_the_error() {
    let (dir, store) = opened().await;
    let replica = dir
        .path()
        .join("accounts/1")
        .join(callsign_tcstore::FILE_NAME);
    let other = rusqlite::Connection::open(&replica).unwrap();
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    // Another connection takes the write lock once both creates are in the group, so the
    // commit fails (after the store's busy timeout).
    let (first, second) = create_mid_group(&store, (a, b), || {
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
    })
    .await;
    assert!(first.is_err() && second.is_err(), "{first:?} {second:?}");
    assert_eq!(store.group_commits().commits.get(), 0);
    drop(other);
    let got = store.get(1, vec![a, b]).await.unwrap();
    assert!(got.iter().all(Option::is_none), "nothing of the group kept");
}

fn small_pool(dir: &std::path::Path, max_open: usize, idle: Option<Duration>) -> TaskStore {
    TaskStore::start(
        dir.into(),
        vec![7; 16],
        Checkpointer::start().unwrap(),
        Settings {
            max_open,
            idle_close: idle,
            history_retention: None,
        },
    )
    .unwrap()
}

fn operations(dir: &std::path::Path, account: AccountId) -> i64 {
    let file = dir
        .join(format!("accounts/{account}"))
        .join(callsign_tcstore::FILE_NAME);
    let c = rusqlite::Connection::open(file).unwrap();
    c.query_row("SELECT count(*) FROM operations", [], |r| r.get(0))
        .unwrap()
}

/// With a history of 300 ms, a task edited 50 times keeps none of those edits' operations
/// once they are older than that (the worker trims by itself, with no command), the task
/// keeps its content, and edits after it are kept.
#[tokio::test]
async fn operations_older_than_the_history_kept_are_trimmed() {
    let dir = tempfile::tempdir().unwrap();
    let store = TaskStore::start(
        dir.path().into(),
        vec![7; 16],
        Checkpointer::start().unwrap(),
        Settings {
            history_retention: Some(Duration::from_millis(300)),
            ..Settings::default()
        },
    )
    .unwrap();
    let uuid = Uuid::new_v4();
    store.create(1, vec![(uuid, new_task("t"))]).await.unwrap();
    for i in 0..50 {
        let patch = TaskPatch {
            description: Some(format!("edit {i}")),
            ..TaskPatch::default()
        };
        store.update(1, vec![(uuid, patch)]).await.unwrap();
    }
    assert!(operations(dir.path(), 1) >= 100);
    let trimmed =
        crate::wal::testing::wait_until(Duration::from_secs(5), || operations(dir.path(), 1) == 0);
    assert!(trimmed, "{} operations left", operations(dir.path(), 1));
    assert!(store.replica_stats().trimmed.get() >= 100);
    let got = store.get(1, vec![uuid]).await.unwrap();
    assert_eq!(got[0].as_ref().unwrap().description, "edit 49");
    let patch = TaskPatch {
        notes: Some("kept".into()),
        ..TaskPatch::default()
    };
    store.update(1, vec![(uuid, patch)]).await.unwrap();
    assert!(operations(dir.path(), 1) >= 2, "the new edit's operations");
}

/// With room for two replicas, a third account's command closes the least recently used
/// one; its tasks are read back when it is opened again, and a replica whose binding was
/// changed while it was closed is refused on that reopen.
#[tokio::test]
async fn a_full_pool_closes_the_least_recently_used_and_reopens_it_checked() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_pool(dir.path(), 2, None);
    let stats = store.replica_stats().clone();
    let tasks: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    for (account, &uuid) in (1..=3).zip(&tasks) {
        let made = store
            .create(account, vec![(uuid, new_task("t"))])
            .await
            .unwrap();
        assert_eq!(made[0].uuid, uuid);
    }
    assert_eq!(stats.open.get(), 2);
    assert_eq!(stats.closed_total("lru"), 1, "account 1 made room for 3");
    // Account 2 is used, so 3 is the least recently used when 1 comes back.
    store.get(2, vec![tasks[1]]).await.unwrap();
    let again = store.get(1, vec![tasks[0]]).await.unwrap();
    assert_eq!(again[0].as_ref().map(|s| s.uuid), Some(tasks[0]));
    assert_eq!(stats.closed_total("lru"), 2);
    store.get(2, vec![tasks[1]]).await.unwrap();
    assert_eq!(stats.closed_total("lru"), 2, "2 was open still");

    // Account 3's replica is closed now: give it another account's binding.
    let file = dir
        .path()
        .join("accounts/3")
        .join(callsign_tcstore::FILE_NAME);
    let c = rusqlite::Connection::open(&file).unwrap();
    c.execute("UPDATE callsign_replica SET account_id = 9", [])
        .unwrap();
    drop(c);
    let refused = store.get(3, vec![tasks[2]]).await.unwrap_err();
    assert!(
        matches!(
            refused,
            StoreError::Foreign {
                account: 3,
                found_account: 9,
                ..
            }
        ),
        "{refused:?}"
    );
}

/// A group holding commands of more accounts than the pool has room for still commits
/// each account once, with all its commands.
#[tokio::test]
async fn a_group_wider_than_the_pool_commits_every_account() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_pool(dir.path(), 1, None);
    let (hold, applying, release) = hold();
    store.tx.send(hold).unwrap();
    applying.recv().unwrap();
    let mut answers = Vec::new();
    let mut made = Vec::new();
    for account in 1..=3 {
        for _ in 0..2 {
            let uuid = Uuid::new_v4();
            let (tx, rx) = oneshot::channel();
            store
                .tx
                .send(Cmd::Create(account, vec![(uuid, new_task("t"))], tx))
                .unwrap();
            answers.push(rx);
            made.push((account, uuid));
        }
    }
    release.send(()).unwrap();
    for rx in answers {
        rx.await.unwrap().unwrap();
    }
    assert_eq!(
        store.group_commits().commits.get(),
        3,
        "one commit per account"
    );
    for (account, uuid) in made {
        let got = store.get(account, vec![uuid]).await.unwrap();
        assert!(got[0].is_some(), "account {account}'s task {uuid}");
    }
    assert_eq!(store.replica_stats().open.get(), 1);
}

/// A replica unused for the idle time is closed (its WAL goes with it), and opened again
/// by the next command.
#[tokio::test]
async fn an_idle_replica_is_closed_and_opened_again_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_pool(dir.path(), 8, Some(Duration::from_millis(200)));
    let stats = store.replica_stats().clone();
    let uuid = Uuid::new_v4();
    store.create(1, vec![(uuid, new_task("t"))]).await.unwrap();
    assert_eq!(stats.open.get(), 1);
    let file = dir
        .path()
        .join("accounts/1")
        .join(callsign_tcstore::FILE_NAME);
    let wal = dir.path().join("accounts/1/taskchampion.sqlite3-wal");
    let closed = crate::wal::testing::wait_until(Duration::from_secs(5), || {
        stats.open.get() == 0 && !wal.exists()
    });
    assert!(closed, "open {}, wal {}", stats.open.get(), wal.exists());
    assert_eq!(stats.closed_total("idle"), 1);
    assert!(file.exists());
    let got = store.get(1, vec![uuid]).await.unwrap();
    assert_eq!(got[0].as_ref().map(|s| s.uuid), Some(uuid));
    assert_eq!(stats.open.get(), 1);
}

/// 600 tasks created and 590 of them completed, then 1,000 more created: the account's
/// working set (on disk and cached) is rebuilt to the 1,010 pending ones once it holds more
/// than twice the 600 it held at its last rebuild, instead of keeping every task ever
/// created (1,600).
#[tokio::test]
async fn the_working_set_is_bounded_by_the_live_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_pool(dir.path(), 4, None);
    let uuids: Vec<Uuid> = (0..600).map(|_| Uuid::new_v4()).collect();
    let tasks = uuids.iter().map(|u| (*u, new_task("t"))).collect();
    store.create(1, tasks).await.unwrap();
    let done = TaskPatch {
        status: Some(TaskStatus::Completed),
        ..TaskPatch::default()
    };
    let patches = uuids[10..].iter().map(|u| (*u, done.clone())).collect();
    store.update(1, patches).await.unwrap();
    store.get(1, Vec::new()).await.unwrap();
    let file = dir
        .path()
        .join("accounts/1")
        .join(callsign_tcstore::FILE_NAME);
    let c = rusqlite::Connection::open(file).unwrap();
    let in_set: i64 = c
        .query_row("SELECT count(*) FROM working_set", [], |r| r.get(0))
        .unwrap();
    // Rebuilt after the creates (600 live), not yet after the completions.
    assert_eq!(in_set, 600);
    let more: Vec<(Uuid, NewTask)> = (0..1000).map(|_| (Uuid::new_v4(), new_task("t"))).collect();
    store.create(1, more).await.unwrap();
    // The rebuild follows the answer: the next command waits for it.
    store.get(1, Vec::new()).await.unwrap();
    let in_set: i64 = c
        .query_row("SELECT count(*) FROM working_set", [], |r| r.get(0))
        .unwrap();
    assert_eq!(in_set, 1010, "the 10 pending and the 1,000 new ones");
}
