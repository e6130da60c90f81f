//! Imports committed many to a batch, as `callsign import` sends them: the set-based path of
//! [`super::Kept`] (the conformance suite commits one item at a time).
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use callsign_core::dto::{NewTask, Origin, Task};
use callsign_core::Prefix;
use callsign_storage::{
    fingerprint, now_ms, AccountId, AllocStore, Commit, CreateRequest, Mutation, Op, Phase1,
    RecoveryReason, Renamed, Render, Reply, TaskStore, Witness,
};
use uuid::Uuid;

use crate::alloc::{PgAlloc, LEASE};
use crate::tasks::PgTasks;

/// Both stores on a fresh schema, and its URL (for another node); `None`: skip.
async fn fresh(label: &str) -> Option<(PgAlloc, PgTasks, String)> {
    let pg = callsign_pgtest::shared()?;
    let url = pg.fresh_schema(label).await.unwrap();
    let (alloc, tasks) = crate::open(&url, 4, LEASE).await.unwrap();
    Some((alloc, tasks, url))
}

/// An account with projects SYN and ENG.
async fn account(alloc: &PgAlloc) -> AccountId {
    let syn = Prefix::parse("SYN").unwrap();
    let owner = callsign_core::MemberName::parse("owner").unwrap();
    let a = alloc
        .create_account("team", &syn, "Syn", &owner)
        .await
        .unwrap()
        .account_id;
    let eng = Prefix::parse("ENG").unwrap();
    alloc.create_project(a, "Eng", &eng).await.unwrap().unwrap();
    a
}

fn render() -> Render {
    Arc::new(|s| serde_json::to_string(&s.task()).expect("a task serialises"))
}

/// A create as an import sends it: from Jira with `key`, keeping it as its own if `keep`.
fn import(idem: &str, project: &str, key: &str, keep: bool) -> Item {
    let mut task = NewTask::new(project, format!("imported {key}"));
    task.origin = Some(Origin {
        tracker: "jira".into(),
        key: Some(key.into()),
    });
    task.keep_number = keep;
    item(idem, Uuid::new_v4(), task, None)
}

fn plain(idem: &str, project: &str) -> Item {
    item(
        idem,
        Uuid::new_v4(),
        NewTask::new(project, "made here"),
        None,
    )
}

/// A device brings back a task it holds as `key` (docs/RECOVERY.md).
fn witness(idem: &str, key: &str) -> Item {
    let project = key.split('-').next().unwrap();
    let w = Witness {
        key: key.into(),
        previous_keys: Vec::new(),
    };
    item(
        idem,
        Uuid::new_v4(),
        NewTask::new(project, "witnessed"),
        Some(w),
    )
}

struct Item {
    m: Mutation,
    task: NewTask,
}

fn item(idem: &str, uuid: Uuid, task: NewTask, witness: Option<Witness>) -> Item {
    let (request, fp) = match witness {
        Some(w) => {
            let request = CreateRequest::new(task.clone(), Some(w));
            let fp = fingerprint("witness", uuid, &request);
            (request.to_json(), fp)
        }
        None => (
            serde_json::to_string(&task).unwrap(),
            fingerprint("create", uuid, &task),
        ),
    };
    let m = Mutation {
        idem: idem.into(),
        uuid,
        parent: None,
        fp,
        request,
    };
    Item { m, task }
}

/// Phase 1, the task store and one phase 2 commit for all of `items`: each one's outcome.
async fn commit(
    alloc: &PgAlloc,
    tasks: &PgTasks,
    account: AccountId,
    items: &[Item],
) -> Vec<callsign_storage::Result<Reply>> {
    let ms: Vec<Mutation> = items.iter().map(|i| i.m.clone()).collect();
    let decided = alloc.phase1(account, Op::Create, &ms, now_ms()).await;
    let mut claims = Vec::new();
    let mut reserved = Vec::new();
    for (i, d) in items.iter().zip(decided) {
        let Phase1::Proceed(at, claim) = d.unwrap() else {
            panic!("{} did not proceed", i.m.idem);
        };
        claims.push(claim);
        reserved.push(at);
    }
    let made: Vec<(Uuid, NewTask)> = items.iter().map(|i| (i.m.uuid, i.task.clone())).collect();
    let snapshots = tasks.create(account, made).await.unwrap();
    let work = items
        .iter()
        .zip(reserved)
        .zip(snapshots)
        .map(|((i, at), snapshot)| Commit {
            idem: i.m.idem.clone(),
            at,
            snapshot,
        })
        .collect();
    alloc
        .commit(account, Op::Create, work, now_ms(), render())
        .await
        .unwrap()
}

fn key_of(r: &Reply) -> String {
    serde_json::from_str::<Task>(&r.body).unwrap().key.unwrap()
}

/// Each item's key (answered `201`), by idempotency key.
fn keys(items: &[Item], out: Vec<callsign_storage::Result<Reply>>) -> HashMap<String, String> {
    items
        .iter()
        .zip(out)
        .map(|(i, r)| {
            let r = r.unwrap();
            assert_eq!(r.status, 201, "{}", i.m.idem);
            (i.m.idem.clone(), key_of(&r))
        })
        .collect()
}

async fn resolves(alloc: &PgAlloc, account: AccountId, key: &str) -> Option<Uuid> {
    let k = callsign_core::TaskKey::parse(key).unwrap();
    alloc
        .uuid_for_key(account, k.prefix.as_str(), &k.scope(), k.number as i64)
        .await
        .unwrap()
        .ok()
}

/// The numbers ENG's counter passed over for an import.
async fn skipped(alloc: &PgAlloc, account: AccountId) -> Vec<i64> {
    let c = alloc.pool.get().await.unwrap();
    c.query(
        "SELECT s.number FROM skipped s JOIN projects p ON p.id = s.project_id
         WHERE p.account_id = $1 AND p.prefix = 'ENG' ORDER BY s.number",
        &[&account],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// One commit mixing kept numbers, plain creates, an origin-only import and a witness: each
/// kept key is bound in batch order (one the batch bound already, one a task holds, one the
/// witness bound: clashes, numbered from the counter after every kept one), the numbers passed
/// over are skipped until bound, and the first task naming an origin key keeps it.
#[tokio::test]
async fn a_batch_binds_its_kept_numbers_in_order_and_never_doubles_one() {
    let Some((alloc, tasks, _)) = fresh("imports_batch").await else {
        return;
    };
    let a = account(&alloc).await;
    let first = plain("first", "ENG");
    let made = keys(
        std::slice::from_ref(&first),
        commit(&alloc, &tasks, a, std::slice::from_ref(&first)).await,
    );
    assert_eq!(made["first"], "ENG-1");

    let items = vec![
        import("a", "ENG", "ENG-5", true),
        plain("b", "ENG"),
        import("c", "ENG", "ENG-5", true),
        import("d", "ENG", "eng-1", true),
        import("e", "ENG", "ENG-3", true),
        witness("w", "ENG-7"),
        import("f", "ENG", "ENG-7", true),
        import("g", "ENG", "ENG-9", true),
        import("h", "ENG", "LIN-4", false),
    ];
    let uuid: HashMap<&str, Uuid> = items
        .iter()
        .map(|i| (i.m.idem.as_str(), i.m.uuid))
        .collect();
    let out = commit(&alloc, &tasks, a, &items).await;
    let got = keys(&items, out);
    let want: HashMap<String, String> = [
        ("a", "ENG-5"),
        ("b", "ENG-10"),
        ("c", "ENG-11"),
        ("d", "ENG-12"),
        ("e", "ENG-3"),
        ("w", "ENG-7"),
        ("f", "ENG-13"),
        ("g", "ENG-9"),
        ("h", "ENG-14"),
    ]
    .into_iter()
    .map(|(i, k)| (i.to_owned(), k.to_owned()))
    .collect();
    assert_eq!(got, want);
    for (idem, key) in &want {
        assert_eq!(
            resolves(&alloc, a, key).await,
            Some(uuid[idem.as_str()]),
            "{key}"
        );
    }
    assert_eq!(resolves(&alloc, a, "ENG-1").await, Some(first.m.uuid));

    // 2 and 4 were passed over by ENG-5, 8 by ENG-9; 6 by the witness: lost, as ever.
    assert_eq!(skipped(&alloc, a).await, [2, 4, 8]);
    let report = alloc.recovery_report(Some(a)).await.unwrap();
    let lost: Vec<&str> = report.lost.iter().map(|l| l.key.as_str()).collect();
    assert_eq!(lost, ["ENG-6"]);
    let clashes: Vec<(&str, Uuid, Uuid)> = report
        .clashes
        .iter()
        .map(|c| (c.key.as_str(), c.held_by, c.claimed_by))
        .collect();
    assert_eq!(
        clashes,
        [
            ("ENG-1", first.m.uuid, uuid["d"]),
            ("ENG-5", uuid["a"], uuid["c"]),
            ("ENG-7", uuid["w"], uuid["f"]),
        ]
    );

    let holders = alloc
        .origin_holders(a, vec!["ENG-5".into(), "ENG-1".into(), "LIN-4".into()])
        .await
        .unwrap();
    let want: HashMap<String, Uuid> = [
        ("ENG-5".to_owned(), uuid["a"]),
        ("ENG-1".to_owned(), uuid["d"]),
        ("LIN-4".to_owned(), uuid["h"]),
    ]
    .into();
    assert_eq!(holders, want);
    let lin = Prefix::parse("LIN").unwrap();
    assert!(alloc
        .create_project(a, "Lin", &lin)
        .await
        .unwrap()
        .is_none());
    let renamed = alloc
        .update_project(
            a,
            &Prefix::parse("SYN").unwrap(),
            Some(&lin),
            None,
            now_ms(),
        )
        .await
        .unwrap();
    assert!(matches!(renamed, Renamed::Imported), "{renamed:?}");

    // The counter goes on after every number of the batch; a skipped number bound later
    // leaves the skipped ones.
    let later = [plain("later", "ENG"), import("i2", "ENG", "ENG-2", true)];
    let got = keys(&later, commit(&alloc, &tasks, a, &later).await);
    assert_eq!(
        (got["later"].as_str(), got["i2"].as_str()),
        ("ENG-15", "ENG-2")
    );
    assert_eq!(skipped(&alloc, a).await, [4, 8]);
    // A device brings back a skipped number (the import's task it named was made elsewhere).
    let back = [witness("back", "ENG-4")];
    let got = keys(&back, commit(&alloc, &tasks, a, &back).await);
    assert_eq!(got["back"], "ENG-4");
    assert_eq!(skipped(&alloc, a).await, [8]);
}

/// An import's kept numbers in the reverse of their order, hundreds to a commit: every one is
/// bound, the counter ends at the highest, and nothing is left skipped or lost.
#[tokio::test]
async fn a_large_import_binds_every_kept_number_in_one_commit() {
    let Some((alloc, tasks, _)) = fresh("imports_large").await else {
        return;
    };
    let a = account(&alloc).await;
    let items: Vec<Item> = (1..=600)
        .rev()
        .map(|n| import(&format!("i{n}"), "ENG", &format!("ENG-{n}"), true))
        .collect();
    let got = keys(&items, commit(&alloc, &tasks, a, &items).await);
    for i in &items {
        let n = i.m.idem.trim_start_matches('i');
        assert_eq!(got[&i.m.idem], format!("ENG-{n}"));
    }
    assert_eq!(skipped(&alloc, a).await, Vec::<i64>::new());
    let report = alloc.recovery_report(Some(a)).await.unwrap();
    assert!(
        report.lost.is_empty() && report.clashes.is_empty(),
        "{report:?}"
    );
    let next = [plain("next", "ENG")];
    let got = keys(&next, commit(&alloc, &tasks, a, &next).await);
    assert_eq!(got["next"], "ENG-601");
}

/// A kept number is bound while its project recovers (as a witness's is); a kept key another
/// task holds then waits for the counter: the item fails alone and leaves no clash, and once
/// recovery ends its retry is numbered and the clash reported.
#[tokio::test]
async fn a_kept_key_that_cannot_be_numbered_leaves_no_clash() {
    let Some((alloc, tasks, _)) = fresh("imports_recovering").await else {
        return;
    };
    let a = account(&alloc).await;
    alloc
        .start_recovery(Some(a), RecoveryReason::Declared, now_ms())
        .await
        .unwrap();
    let items = [
        import("a", "ENG", "ENG-4", true),
        import("b", "ENG", "ENG-4", true),
    ];
    let mut out = commit(&alloc, &tasks, a, &items).await;
    let b = out.pop().unwrap();
    assert!(
        matches!(&b, Err(callsign_storage::Error::Recovering { .. })),
        "{b:?}"
    );
    let r = out.pop().unwrap().unwrap();
    assert_eq!((r.status, key_of(&r)), (201, "ENG-4".to_owned()));
    let report = alloc.recovery_report(Some(a)).await.unwrap();
    assert!(report.clashes.is_empty(), "{report:?}");

    alloc.end_recovery(Some(a), None).await.unwrap();
    let retry = [item(
        "b-again",
        items[1].m.uuid,
        items[1].task.clone(),
        None,
    )];
    let got = keys(&retry, commit(&alloc, &tasks, a, &retry).await);
    assert_eq!(got["b-again"], "ENG-5");
    let report = alloc.recovery_report(Some(a)).await.unwrap();
    let clashes: Vec<(&str, Uuid, Uuid)> = report
        .clashes
        .iter()
        .map(|c| (c.key.as_str(), c.held_by, c.claimed_by))
        .collect();
    assert_eq!(clashes, [("ENG-4", items[0].m.uuid, items[1].m.uuid)]);
    assert_eq!(skipped(&alloc, a).await, [1, 2, 3]);
}

/// Two nodes commit imports whose kept keys overlap, at once: no number is given twice, every
/// task has one key, and each kept key went to one task (the other's clash is reported).
#[tokio::test]
async fn two_nodes_importing_the_same_keys_never_double_one() {
    let Some((one, tasks, url)) = fresh("imports_nodes").await else {
        return;
    };
    let (two, _) = crate::open(&url, 4, LEASE).await.unwrap();
    let a = account(&one).await;
    let batch = |node: &str, numbers: std::ops::RangeInclusive<u32>| -> Vec<Item> {
        numbers
            .map(|n| import(&format!("{node}{n}"), "ENG", &format!("ENG-{n}"), true))
            .collect()
    };
    let (first, second) = (batch("x", 1..=50), batch("y", 26..=75));
    let (out1, out2) = tokio::join!(
        commit(&one, &tasks, a, &first),
        commit(&two, &tasks, a, &second)
    );
    let got: Vec<String> = keys(&first, out1)
        .into_values()
        .chain(keys(&second, out2).into_values())
        .collect();
    let distinct: BTreeSet<&String> = got.iter().collect();
    assert_eq!((got.len(), distinct.len()), (100, 100), "no key twice");
    for n in 1..=75 {
        assert!(distinct.contains(&format!("ENG-{n}")), "ENG-{n} kept");
    }
    for n in 76..=100 {
        assert!(distinct.contains(&format!("ENG-{n}")), "ENG-{n} numbered");
    }
    let report = one.recovery_report(Some(a)).await.unwrap();
    assert_eq!(report.clashes.len(), 25);
    assert!(report.lost.is_empty(), "{report:?}");
}
