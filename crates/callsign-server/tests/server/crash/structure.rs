//! Crash recovery of structured keys (docs/STRUCTURE.md): a subtask create and a move, each
//! aborted at every crash point, then retried under the same idempotency key after a restart,
//! with or without the reaper settling the slot first; on SQLite and, where one can be
//! started, on PostgreSQL (a new node after the dead one). Either way the retry answers one
//! key, no scope skips or repeats a number, and every key ever assigned still names its task.
use callsign_server::crash::{
    PHASE1_AFTER_SLOT, PHASE2_AFTER_COMMIT, PHASE2_AFTER_TASK_WRITE, REAPER_AFTER_TASK_CHECK,
};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{crash_on, reaper_dies_settling, Db, Req};
use crate::common::{create_account_in, eventually_async, store_task, Client};

const IDEM: &str = "crash-key";

/// What the crash interrupts.
#[derive(Debug, Clone, Copy)]
enum Scenario {
    /// `PUT` of a subtask under SYN-1.
    Subtask,
    /// `PATCH /v1/tasks/SYN-1 {"project": "OPS"}`, SYN-1 having the subtask SYN-1.1 and SYN-2
    /// existing beside it.
    Move,
}

/// The tasks a scenario is about.
struct Tasks {
    /// SYN-1: the parent, or the task that moves.
    top: Uuid,
    /// The subtask whose create crashes, or SYN-1.1, which moves with SYN-1.
    sub: Uuid,
}

/// Creates a task in `project` (a subtask when `parent` names one); it must get `want`.
async fn create(client: &Client, idem: &str, project: &str, parent: Option<&str>, want: &str) {
    let (status, _, task) = client
        .put(Uuid::new_v4(), idem, &task_body(project, idem, parent))
        .await
        .unwrap();
    assert_eq!((status, task["key"].as_str()), (201, Some(want)), "{task}");
}

fn task_body(project: &str, description: &str, parent: Option<&str>) -> Value {
    let mut body = json!({"project": project, "description": description});
    if let Some(p) = parent {
        body["parent"] = json!(p);
    }
    body
}

/// Every key ever assigned, sorted; one no longer current is marked `(old)`.
async fn keys_ever(db: &Db) -> Vec<String> {
    let sql = "SELECT p.prefix || '-' || CASE WHEN k.scope = '' THEN '' ELSE k.scope || '.' END
                      || k.number || CASE WHEN k.current THEN '' ELSE ' (old)' END
               FROM keys k JOIN projects p ON p.id = k.project_id";
    let mut keys = db.texts(sql, "").await;
    keys.sort();
    keys
}

/// The task's properties in the task store.
async fn stored(db: &Db, uuid: Uuid) -> Option<Value> {
    match db {
        Db::Sqlite(dir) => store_task(dir, uuid),
        Db::Postgres(_) => {
            let sql = "SELECT data::text FROM tc_tasks WHERE uuid::text = $1";
            let data = db.texts(sql, &uuid.to_string()).await.pop()?;
            serde_json::from_str(&data).ok()
        }
    }
}

/// `GET /v1/tasks/{key}` answers `uuid` with its current key `now` and previous keys `before`.
async fn resolves(client: &Client, key: &str, uuid: Uuid, now: &str, before: &[&str]) {
    let (status, task) = client.get(&format!("/v1/tasks/{key}")).await.unwrap();
    assert_eq!(status, 200, "{key}: {task}");
    let previous = json!(before);
    let previous = if before.is_empty() {
        &Value::Null
    } else {
        &previous
    };
    assert_eq!(
        (
            task["uuid"].as_str(),
            task["key"].as_str(),
            &task["previous_keys"]
        ),
        (Some(uuid.to_string().as_str()), Some(now), previous),
        "{key}"
    );
}

/// The store's `key` and `project` of `uuid` become `key` and its prefix (written after the
/// commit, or by the reaper after a crash).
async fn in_store(db: &Db, uuid: Uuid, key: &str) {
    let project = key.split('-').next().unwrap();
    eventually_async(10, &format!("{key} written onto its task"), || async {
        let t = stored(db, uuid).await;
        t.is_some_and(|t| t["key"] == key && t["project"] == project)
    })
    .await;
}

impl Scenario {
    /// Makes the tasks the scenario starts from, on a server stopped before the crash.
    async fn prepare(self, db: &Db, token: &str) -> Tasks {
        let server = db.serve(&[], &[]);
        let client = Client::new(&server.url, token);
        let top = Uuid::new_v4();
        let (_, _, made) = client
            .put(top, "prep-top", &task_body("SYN", "Top", None))
            .await
            .unwrap();
        assert_eq!(made["key"], "SYN-1", "{made}");
        let sub = Uuid::new_v4();
        if let Scenario::Move = self {
            let ops = json!({"name": "Ops", "prefix": "OPS"});
            let (status, made) = client.post("/v1/projects", &ops).await.unwrap();
            assert_eq!(status, 201, "{made}");
            let (_, _, made) = client
                .put(sub, "prep-sub", &task_body("SYN", "Sub", Some("SYN-1")))
                .await
                .unwrap();
            assert_eq!(made["key"], "SYN-1.1", "{made}");
            create(&client, "prep-2", "SYN", None, "SYN-2").await;
        }
        Tasks { top, sub }
    }

    /// The request that crashes, and the status and key its answer must carry.
    fn request(self, t: &Tasks) -> (Req, u16, &'static str) {
        match self {
            Scenario::Subtask => (
                Req::Put(t.sub, task_body("SYN", "Crash me", Some("SYN-1"))),
                201,
                "SYN-1.1",
            ),
            Scenario::Move => (Req::Patch("SYN-1", json!({"project": "OPS"})), 200, "OPS-1"),
        }
    }

    /// After the retry: the next numbers follow without a gap in every scope, no number is
    /// handed out twice, old keys name their tasks, and the store shows the keys.
    async fn check(self, client: &Client, db: &Db, t: &Tasks) {
        match self {
            Scenario::Subtask => {
                create(client, "next-sub", "SYN", Some("SYN-1"), "SYN-1.2").await;
                create(client, "next", "SYN", None, "SYN-2").await;
                let keys = keys_ever(db).await;
                assert_eq!(keys, ["SYN-1", "SYN-1.1", "SYN-1.2", "SYN-2"]);
                resolves(client, "syn 1.1", t.sub, "SYN-1.1", &[]).await;
                in_store(db, t.sub, "SYN-1.1").await;
            }
            Scenario::Move => {
                resolves(client, "SYN-1", t.top, "OPS-1", &["SYN-1"]).await;
                resolves(client, "SYN-1.1", t.sub, "OPS-1.1", &["SYN-1.1"]).await;
                // A subtask named under the old key, by a client that still thinks SYN, goes
                // where its parent is now.
                create(client, "next-sub", "SYN", Some("SYN-1"), "OPS-1.2").await;
                create(client, "next-ops", "OPS", None, "OPS-2").await;
                create(client, "next-syn", "SYN", None, "SYN-3").await;
                assert_eq!(
                    keys_ever(db).await,
                    [
                        "OPS-1",
                        "OPS-1.1",
                        "OPS-1.2",
                        "OPS-2",
                        "SYN-1 (old)",
                        "SYN-1.1 (old)",
                        "SYN-2",
                        "SYN-3"
                    ]
                );
                in_store(db, t.top, "OPS-1").await;
                in_store(db, t.sub, "OPS-1.1").await;
            }
        }
    }
}

/// Crashes `scenario`'s request at `point` (the reaper's point: a crash after the task write,
/// then a reaper that dies settling it), restarts (on PostgreSQL: another node, the dead one's
/// claims lapsing after 1 s), lets the reaper settle the slot first if `reaper_first`, retries
/// under the same idempotency key and checks the keys.
async fn crash_then_retry(db: Db, scenario: Scenario, point: &str, reaper_first: bool) {
    let (_, token) = create_account_in(&db.database(), "SYN");
    let tasks = scenario.prepare(&db, &token).await;
    let (req, status, key) = scenario.request(&tasks);
    let in_reaper = point == REAPER_AFTER_TASK_CHECK;
    let dies_at = if in_reaper {
        PHASE2_AFTER_TASK_WRITE
    } else {
        point
    };
    crash_on(&db.database(), &db.args(&[]), dies_at, &req, IDEM, &token).await;
    if in_reaper {
        reaper_dies_settling(&db, IDEM).await;
    }

    // A slot whose change never reached the store is failed only past the window: 1 s here.
    let fails = point == PHASE1_AFTER_SLOT && reaper_first;
    let mut args = vec!["--reaper-interval", "200ms"];
    if fails {
        args.extend(["--idempotency-window", "1s"]);
    }
    let server = db.serve(&args, &[]);
    let client = Client::new(&server.url, &token);
    if reaper_first {
        eventually_async(10, "the reaper settles the slot", || async {
            let state = db.slot_state(IDEM).await;
            match fails {
                true => state.as_deref().is_none_or(|s| s == "failed"),
                false => state.as_deref() == Some("committed"),
            }
        })
        .await;
    }
    let (got, replayed, task) = req.send_through_leases(&client, IDEM).await;
    let what = format!("{scenario:?} crashed at {point}");
    assert_eq!(
        (got, task["key"].as_str()),
        (status, Some(key)),
        "{what}: {task}"
    );
    // Committed before the retry (by the crashed request or the reaper), its answer again;
    // failed by the reaper, a new request. Left pending after the task write, the retry and
    // the reaper's first pass race for it: one key either way.
    if point == PHASE2_AFTER_COMMIT || reaper_first {
        assert_eq!(replayed, !fails, "{what}: replayed");
    }
    scenario.check(&client, &db, &tasks).await;
}

/// [`crash_then_retry`] on a fresh SQLite data dir.
async fn on_sqlite(scenario: Scenario, point: &str, reaper_first: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::Sqlite(dir.path().to_owned());
    crash_then_retry(db, scenario, point, reaper_first).await;
}

/// [`crash_then_retry`] on a fresh schema of the shared PostgreSQL (skipped without one,
/// outside CI).
async fn on_postgres(scenario: Scenario, point: &str, reaper_first: bool) {
    let Some(pg) = callsign_pgtest::shared() else {
        return;
    };
    let url = pg.fresh_schema("crash_structure").await.unwrap();
    crash_then_retry(Db::Postgres(url), scenario, point, reaper_first).await;
}

/// Each case (scenario, crash point, reaper first) as a test on SQLite, and in `postgres` the
/// same on PostgreSQL.
macro_rules! cases {
    ($($name:ident: $scenario:ident at $point:ident, reaper first: $reaper:literal;)*) => {
        $(
            #[tokio::test]
            async fn $name() {
                on_sqlite(Scenario::$scenario, $point, $reaper).await;
            }
        )*

        mod postgres {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    on_postgres(Scenario::$scenario, $point, $reaper).await;
                }
            )*
        }
    };
}

cases! {
    subtask_crash_after_phase1_slot_then_retry:
        Subtask at PHASE1_AFTER_SLOT, reaper first: false;
    subtask_crash_after_phase1_slot_failed_by_the_reaper_then_retry:
        Subtask at PHASE1_AFTER_SLOT, reaper first: true;
    subtask_crash_after_task_write_then_retry:
        Subtask at PHASE2_AFTER_TASK_WRITE, reaper first: false;
    subtask_crash_after_task_write_committed_by_the_reaper:
        Subtask at PHASE2_AFTER_TASK_WRITE, reaper first: true;
    subtask_crash_after_commit_replays:
        Subtask at PHASE2_AFTER_COMMIT, reaper first: false;
    subtask_crash_inside_the_reaper_then_the_next_reaper_commits:
        Subtask at REAPER_AFTER_TASK_CHECK, reaper first: true;
    move_crash_after_phase1_slot_then_retry:
        Move at PHASE1_AFTER_SLOT, reaper first: false;
    move_crash_after_phase1_slot_failed_by_the_reaper_then_retry:
        Move at PHASE1_AFTER_SLOT, reaper first: true;
    move_crash_after_task_write_then_retry:
        Move at PHASE2_AFTER_TASK_WRITE, reaper first: false;
    move_crash_after_task_write_committed_by_the_reaper:
        Move at PHASE2_AFTER_TASK_WRITE, reaper first: true;
    move_crash_after_commit_replays:
        Move at PHASE2_AFTER_COMMIT, reaper first: false;
    move_crash_inside_the_reaper_then_the_next_reaper_commits:
        Move at REAPER_AFTER_TASK_CHECK, reaper first: true;
}
