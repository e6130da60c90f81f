//! The conformance suite every storage backend passes (the pattern of TaskChampion's
//! `storage_tests!`), a dev-dependency of each backend crate. A backend's test binary gives a
//! function that makes a fresh, empty [`Backend`] (or `None` to skip, when its database cannot
//! be had outside CI) and invokes [`storage_conformance!`](crate::storage_conformance):
//!
//! ```ignore
//! async fn fresh() -> Option<Backend> { ... }
//! callsign_storage_conformance::storage_conformance!(fresh);
//! ```
//!
//! Each check is one public async function here, so a failure names what broke. They cover
//! the key protocol's steps (G1, G2, G5), the claim, the change feed (one entry per task, in
//! commit order, paged), the resolver's lookups, the reaper's steps, the bounds of issue 27
//! (slot purge with tombstones; feed compaction), the window, and the task store.
use std::collections::BTreeSet;
use std::sync::Arc;

use callsign_core::dto::{NewTask, Task, TaskPatch, TaskStatus};
use callsign_core::{MemberName, Prefix, Priority, Role};
use callsign_storage::rows::hash_token;
use callsign_storage::window::Setting;
use callsign_storage::{
    fingerprint, now_ms, AccountId, AddMember, AllocStore, Commit, CreateRequest, Mutation,
    NewInvite, Op, Phase1, RecoveryReason, Redeem, Refusal, RemoveMember, Render, Reply, Reserved,
    Snapshot, TaskStore, Witness,
};
use uuid::Uuid;

/// A backend under test: fresh stores, and whatever must live as long as they do.
pub struct Backend {
    pub alloc: Arc<dyn AllocStore>,
    pub tasks: Arc<dyn TaskStore>,
    pub keep: Box<dyn std::any::Any + Send + Sync>,
}

/// Generates one `#[tokio::test]` per check, each on a fresh backend from `$make` (an async
/// function returning `Option<Backend>`; `None` skips the test).
#[macro_export]
macro_rules! storage_conformance {
    ($make:path) => {
        $crate::storage_conformance!(@tests $make;
            accounts_tokens_and_projects,
            members_own_tokens_and_a_removed_one_has_none,
            an_invite_is_redeemed_once_and_not_after_it_expires,
            creates_number_without_gaps_and_replay,
            a_claimed_key_is_in_progress_until_released,
            concurrent_creates_take_every_number_once,
            a_batch_numbers_each_project_in_order_and_each_task_once,
            updates_need_a_committed_create,
            the_feed_has_one_entry_per_task_in_commit_order,
            keys_resolve_within_their_account,
            the_reaper_fails_an_expired_slot_and_frees_its_uuid,
            keys_not_in_store_until_marked,
            purged_slots_leave_a_tombstone_and_keys_hold,
            the_window_is_stored,
            the_task_store_keeps_tasks,
            due_and_priority_are_kept_set_and_cleared,
            concurrent_edits_merge_field_by_field_and_keep_conflicts,
            commit_links_are_kept_one_per_commit,
            subtasks_number_under_their_parent_without_gaps,
            a_move_renumbers_the_task_and_its_subtasks_and_keeps_the_old_keys,
            a_rename_moves_the_prefix_and_every_old_key_still_resolves,
            a_recovering_project_numbers_nothing_until_recovery_ends,
            witnesses_bring_back_keys_and_never_double_a_number,
            a_move_lost_to_a_rollback_takes_back_the_key_the_devices_kept,
            devices_check_in_after_a_rollback,
            imports_keep_numbers_and_their_tracker_keys,
        );
    };
    (@tests $make:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                if let Some(b) = $make().await {
                    $crate::$name(b).await;
                }
            }
        )*
    };
}

fn new_task(prefix: &str, description: &str) -> NewTask {
    NewTask {
        project: prefix.to_owned(),
        description: description.to_owned(),
        notes: String::new(),
        status: None,
        tags: vec!["t".into()],
        due: None,
        priority: None,
        parent: None,
        created_at: None,
        assignee: None,
        created_by: None,
        origin: None,
        keep_number: false,
        commits: Vec::new(),
    }
}

fn mutation(idem: &str, uuid: Uuid, body: &NewTask) -> Mutation {
    Mutation {
        idem: idem.to_owned(),
        uuid,
        parent: None,
        fp: fingerprint("create", uuid, body),
        request: serde_json::to_string(body).unwrap(),
    }
}

async fn account(b: &Backend, prefix: &str) -> AccountId {
    let p = Prefix::parse(prefix).unwrap();
    b.alloc
        .create_account("team", &p, prefix, &member("owner"))
        .await
        .unwrap()
        .account_id
}

/// What a create came to.
#[derive(Debug)]
enum Outcome {
    Answered(Reply),
    Refused(Refusal),
}

impl Outcome {
    fn reply(self) -> Reply {
        match self {
            Outcome::Answered(r) => r,
            Outcome::Refused(c) => panic!("refused: {c:?}"),
        }
    }
    fn code(self) -> Refusal {
        match self {
            Outcome::Refused(c) => c,
            Outcome::Answered(r) => panic!("answered {r:?}"),
        }
    }
}

/// A second project of `account`, `OPS` ("Ops").
async fn ops_project(b: &Backend, account: AccountId) {
    let ops = Prefix::parse("OPS").unwrap();
    b.alloc
        .create_project(account, "Ops", &ops)
        .await
        .unwrap()
        .unwrap();
}

fn task_of(r: &Reply) -> Task {
    serde_json::from_str(&r.body).unwrap()
}

/// The whole create protocol for one task: phase 1, the task store, phase 2.
async fn create(
    b: &Backend,
    account: AccountId,
    idem: &str,
    uuid: Uuid,
    body: &NewTask,
) -> Outcome {
    run_create(b, account, mutation(idem, uuid, body), body)
        .await
        .unwrap()
}

/// The create protocol for the mutation `m` of `body`: phase 1's refusal or replay, else the
/// commit's own outcome (the batch itself must succeed).
async fn run_create(
    b: &Backend,
    account: AccountId,
    m: Mutation,
    body: &NewTask,
) -> callsign_storage::Result<Outcome> {
    let (idem, uuid) = (m.idem.clone(), m.uuid);
    let mut p1 = b.alloc.phase1(account, Op::Create, &[m], now_ms()).await;
    let (at, claim) = match p1.pop().unwrap() {
        Err(e) => panic!("phase 1 failed: {e}"),
        Ok(Phase1::Refused(why)) => return Ok(Outcome::Refused(why)),
        Ok(Phase1::Replay(r)) => return Ok(Outcome::Answered(r)),
        Ok(Phase1::Proceed(at, claim)) => (at, claim),
    };
    let snapshot = b
        .tasks
        .create(account, vec![(uuid, body.clone())])
        .await
        .unwrap()
        .pop()
        .unwrap();
    let r = try_commit(b, account, Op::Create, &idem, at, snapshot).await;
    drop(claim);
    r.map(Outcome::Answered)
}

async fn commit(
    b: &Backend,
    account: AccountId,
    op: Op,
    idem: &str,
    at: Reserved,
    snapshot: Snapshot,
) -> Reply {
    try_commit(b, account, op, idem, at, snapshot)
        .await
        .unwrap()
}

/// Phase 2's commit of one item: its own outcome (the batch itself must succeed).
async fn try_commit(
    b: &Backend,
    account: AccountId,
    op: Op,
    idem: &str,
    at: Reserved,
    snapshot: Snapshot,
) -> callsign_storage::Result<Reply> {
    let work = vec![Commit {
        idem: idem.to_owned(),
        at,
        snapshot,
    }];
    b.alloc
        .commit(account, op, work, now_ms(), render())
        .await
        .unwrap()
        .pop()
        .unwrap()
}

/// The answer a commit stores: the task's JSON, as the server makes it.
fn render() -> Render {
    Arc::new(|s| serde_json::to_string(&s.task()).expect("a task serialises"))
}

fn member(name: &str) -> MemberName {
    MemberName::parse(name).unwrap()
}

pub async fn accounts_tokens_and_projects(b: Backend) {
    let p = Prefix::parse("SYN").unwrap();
    let made = b
        .alloc
        .create_account("team", &p, "Sync", &member("alice"))
        .await
        .unwrap();
    assert_eq!(made.project.prefix, "SYN");
    assert_eq!(
        (made.member.name.as_str(), made.member.role),
        ("alice", Role::Owner)
    );
    let hash = hash_token(&made.token);
    let alice = b.alloc.caller_by_token_hash(&hash).await.unwrap().unwrap();
    assert_eq!(alice.account, made.account_id);
    assert_eq!((alice.name.as_str(), alice.role), ("alice", Role::Owner));
    assert_eq!(b.alloc.caller_by_token_hash(b"nope").await.unwrap(), None);
    let token = b
        .alloc
        .create_token(made.account_id, &member("Alice"), "laptop")
        .await
        .unwrap()
        .expect("the account and its member exist");
    assert_ne!(token, made.token);
    let hash = hash_token(&token);
    assert_eq!(
        b.alloc.caller_by_token_hash(&hash).await.unwrap(),
        Some(alice.clone()),
        "a second device of the same member"
    );
    for (account, name) in [(made.account_id + 1000, "alice"), (made.account_id, "bob")] {
        let none = b.alloc.create_token(account, &member(name), "x").await;
        assert_eq!(none.unwrap(), None, "{account} {name}");
    }

    let ops = Prefix::parse("OPS").unwrap();
    let made_ops = b
        .alloc
        .create_project(made.account_id, "Operations", &ops)
        .await
        .unwrap()
        .expect("a new prefix");
    assert_eq!(made_ops.prefix, "OPS");
    assert_eq!(
        b.alloc
            .create_project(made.account_id, "Again", &ops)
            .await
            .unwrap(),
        None,
        "a prefix is unique per account"
    );
    let names: Vec<String> = b
        .alloc
        .list_projects(made.account_id)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.prefix)
        .collect();
    assert_eq!(names, ["OPS", "SYN"], "listed by prefix");
    let other = b
        .alloc
        .create_account("other", &ops, "Ops", &member("alice"))
        .await
        .unwrap();
    assert_ne!(other.account_id, made.account_id);
    assert_ne!(
        other.project.id, made_ops.id,
        "project ids are per account: another account's first project is its own"
    );
    let ids = b.alloc.account_ids().await.unwrap();
    assert!(ids.contains(&made.account_id) && ids.contains(&other.account_id));
    assert_eq!(b.alloc.instance_id().await.unwrap().len(), 16);
    assert!(b.alloc.cursor_key().await.unwrap().len() >= 32);
    b.alloc.probe().await.unwrap();
}

pub async fn an_invite_is_redeemed_once_and_not_after_it_expires(b: Backend) {
    let syn = Prefix::parse("SYN").unwrap();
    let team = b
        .alloc
        .create_account("team", &syn, "Sync", &member("alice"))
        .await
        .unwrap();
    let hash = hash_token(&team.token);
    let alice = b.alloc.caller_by_token_hash(&hash).await.unwrap().unwrap();
    let now = now_ms();
    let invite = |code: &str, role, expires_at| {
        let alloc = b.alloc.clone();
        let inv = NewInvite {
            account: team.account_id,
            code_hash: code.as_bytes().to_vec(),
            role,
            made_by: alice.member,
            now,
            expires_at,
        };
        async move { alloc.create_invite(inv).await.unwrap() }
    };
    let redeem = |code: &str, name: &str, at| {
        let (alloc, code, name) = (b.alloc.clone(), code.as_bytes().to_vec(), member(name));
        async move {
            alloc
                .redeem_invite(&code, &name, "laptop", at)
                .await
                .unwrap()
        }
    };
    invite("one", Role::Member, now + 1_000).await;
    invite("two", Role::Owner, now + 1_000).await;
    assert_eq!(
        redeem("one", "alice", now).await,
        Redeem::Taken,
        "a taken name"
    );
    let Redeem::Joined(bob) = redeem("one", "bob", now).await else {
        panic!("the code is still good after a taken name");
    };
    assert_eq!(
        (bob.name.as_str(), bob.role, bob.account_id),
        ("bob", Role::Member, team.account_id)
    );
    let hash = hash_token(&bob.token);
    let caller = b.alloc.caller_by_token_hash(&hash).await.unwrap().unwrap();
    assert_eq!(
        caller.member, bob.member_id,
        "the token is the new member's"
    );
    assert_eq!(redeem("one", "carol", now).await, Redeem::Used);
    assert_eq!(redeem("nope", "carol", now).await, Redeem::NotFound);
    assert_eq!(redeem("two", "carol", now + 1_000).await, Redeem::Expired);
    let Redeem::Joined(carol) = redeem("two", "carol", now + 999).await else {
        panic!("not expired yet");
    };
    assert_eq!(carol.role, Role::Owner, "the invite's role");
    invite("three", Role::Member, now + 5_000).await;
    assert_eq!(
        b.alloc.purge_invites(now + 2_000).await.unwrap(),
        2,
        "the expired two"
    );
    assert_eq!(redeem("one", "dave", now).await, Redeem::NotFound, "purged");
    assert!(
        matches!(redeem("three", "dave", now).await, Redeem::Joined(_)),
        "kept"
    );
}

pub async fn members_own_tokens_and_a_removed_one_has_none(b: Backend) {
    let syn = Prefix::parse("SYN").unwrap();
    let team = b
        .alloc
        .create_account("team", &syn, "Sync", &member("alice"))
        .await
        .unwrap();
    let other = b
        .alloc
        .create_account("other", &syn, "Sync", &member("zed"))
        .await
        .unwrap();
    let add = |account, name: &str, role| {
        let (alloc, name) = (b.alloc.clone(), member(name));
        async move {
            alloc
                .add_member(account, &name, role, "laptop")
                .await
                .unwrap()
        }
    };
    let AddMember::Added(bob) = add(team.account_id, "Bob", Role::Member).await else {
        panic!("bob is new");
    };
    assert_eq!((bob.name.as_str(), bob.role), ("bob", Role::Member));
    assert_eq!(
        add(team.account_id, "bob", Role::Owner).await,
        AddMember::Taken
    );
    assert_eq!(
        add(team.account_id + 1000, "bob", Role::Member).await,
        AddMember::NoAccount
    );
    assert!(
        matches!(
            add(other.account_id, "bob", Role::Member).await,
            AddMember::Added(_)
        ),
        "names are per account"
    );
    let caller = |token: String| {
        let alloc = b.alloc.clone();
        async move {
            let hash = hash_token(&token);
            alloc.caller_by_token_hash(&hash).await.unwrap()
        }
    };
    let bob_caller = caller(bob.token.clone()).await.expect("bob's token works");
    assert_eq!(
        (bob_caller.account, bob_caller.member),
        (team.account_id, bob.member_id)
    );
    assert_eq!(bob_caller.role, Role::Member);
    let phone = b
        .alloc
        .create_token(team.account_id, &member("bob"), "phone")
        .await
        .unwrap()
        .unwrap();

    let listed = b
        .alloc
        .list_members(team.account_id)
        .await
        .unwrap()
        .unwrap();
    let shown: Vec<_> = listed
        .iter()
        .map(|m| (m.name.as_str(), m.role, m.tokens))
        .collect();
    assert_eq!(shown, [("alice", Role::Owner, 1), ("bob", Role::Member, 2)]);
    assert_eq!(
        b.alloc.list_members(team.account_id + 1000).await.unwrap(),
        None
    );

    let now = now_ms();
    let remove = |name: &str| {
        let (alloc, name) = (b.alloc.clone(), member(name));
        async move {
            alloc
                .remove_member(team.account_id, &name, now)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        remove("alice").await,
        RemoveMember::LastOwner,
        "the only owner stays"
    );
    assert_eq!(remove("carol").await, RemoveMember::NotFound);
    assert_eq!(remove("bob").await, RemoveMember::Removed { tokens: 2 });
    assert_eq!(caller(bob.token.clone()).await, None, "bob's laptop is out");
    assert_eq!(caller(phone).await, None, "and his phone");
    assert_eq!(
        remove("bob").await,
        RemoveMember::NotFound,
        "removed already"
    );
    assert_eq!(
        add(team.account_id, "bob", Role::Member).await,
        AddMember::Taken,
        "a removed member's name still names them"
    );
    let none = b
        .alloc
        .create_token(team.account_id, &member("bob"), "x")
        .await;
    assert_eq!(none.unwrap(), None, "no new token for a removed member");
    let listed = b
        .alloc
        .list_members(team.account_id)
        .await
        .unwrap()
        .unwrap();
    let last = listed.last().unwrap();
    assert_eq!(
        (last.name.as_str(), last.removed_at, last.tokens),
        ("bob", Some(now), 0)
    );
    assert!(
        caller(team.token.clone()).await.is_some(),
        "alice still works"
    );

    // With a second owner, the first may go.
    assert!(matches!(
        add(team.account_id, "carol", Role::Owner).await,
        AddMember::Added(_)
    ));
    assert_eq!(remove("alice").await, RemoveMember::Removed { tokens: 1 });
    assert_eq!(remove("carol").await, RemoveMember::LastOwner);
}
pub async fn creates_number_without_gaps_and_replay(b: Backend) {
    let a = account(&b, "SYN").await;
    let mut uuids = Vec::new();
    for i in 1..=5 {
        let u = Uuid::new_v4();
        uuids.push(u);
        let r = create(
            &b,
            a,
            &format!("k{i}"),
            u,
            &new_task("SYN", &format!("t{i}")),
        )
        .await
        .reply();
        assert_eq!(r.status, 201);
        assert!(!r.replayed);
        assert_eq!(
            task_of(&r).key.as_deref(),
            Some(format!("SYN-{i}").as_str())
        );
        assert!(r.change.is_some());
    }
    // The same request again replays the stored answer.
    let body = new_task("SYN", "t1");
    let again = create(&b, a, "k1", uuids[0], &body).await.reply();
    assert!(again.replayed);
    assert_eq!(again.status, 201);
    assert_eq!(task_of(&again).key.as_deref(), Some("SYN-1"));
    // Another request under a used key: 422.
    let code = create(&b, a, "k1", uuids[0], &new_task("SYN", "other"))
        .await
        .code();
    assert_eq!(code, Refusal::KeyReused(Op::Create));
    // The same UUID with another body under a new key: 409 task_exists.
    let code = create(&b, a, "k-new", uuids[0], &new_task("SYN", "other"))
        .await
        .code();
    assert!(matches!(code, Refusal::TaskExists(u) if u == uuids[0]));
    // The same task under a new key keeps its key (G1): 200, no number taken.
    let r = create(&b, a, "k1-again", uuids[0], &body).await.reply();
    assert_eq!(r.status, 200);
    assert_eq!(task_of(&r).key.as_deref(), Some("SYN-1"));
    let r = create(&b, a, "k6", Uuid::new_v4(), &new_task("SYN", "t6"))
        .await
        .reply();
    assert_eq!(task_of(&r).key.as_deref(), Some("SYN-6"), "no gap");
    // An unknown project takes nothing.
    let code = create(&b, a, "k7", Uuid::new_v4(), &new_task("NOPE", "x"))
        .await
        .code();
    assert_eq!(code, Refusal::NoProject("NOPE".into()));
    // Another account numbers on its own.
    let other = account(&b, "SYN").await;
    let r = create(&b, other, "k1", Uuid::new_v4(), &new_task("SYN", "x"))
        .await
        .reply();
    assert_eq!(task_of(&r).key.as_deref(), Some("SYN-1"));
}

pub async fn a_claimed_key_is_in_progress_until_released(b: Backend) {
    let a = account(&b, "SYN").await;
    let u = Uuid::new_v4();
    let body = new_task("SYN", "held");
    let m = mutation("k", u, &body);
    let first = b
        .alloc
        .phase1(a, Op::Create, std::slice::from_ref(&m), now_ms())
        .await;
    let Ok(Phase1::Proceed(at, claim)) = first.into_iter().next().unwrap() else {
        panic!("a new key proceeds");
    };
    let second = b
        .alloc
        .phase1(a, Op::Create, std::slice::from_ref(&m), now_ms())
        .await;
    assert_eq!(
        refusal(second.into_iter().next().unwrap()),
        Some(Refusal::InProgress),
        "a held key is in progress"
    );
    assert!(
        b.alloc.claim(a, "k").await.unwrap().is_none(),
        "the reaper cannot take a held key"
    );
    drop(claim);
    // Released (a lease may be released off the caller's path, so allow it a moment): the
    // pending slot resumes, at the same slot.
    let mut resumed = None;
    for _ in 0..100 {
        let r = b
            .alloc
            .phase1(a, Op::Create, std::slice::from_ref(&m), now_ms())
            .await;
        match r.into_iter().next().unwrap() {
            Ok(Phase1::Proceed(at, claim)) => {
                resumed = Some((at, claim));
                break;
            }
            other => assert_eq!(refusal(other), Some(Refusal::InProgress)),
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (at2, claim) = resumed.expect("a pending slot resumes once released");
    assert_eq!(at2.slot, at.slot);
    let snap = b
        .tasks
        .create(a, vec![(u, body)])
        .await
        .unwrap()
        .pop()
        .unwrap();
    let r = commit(&b, a, Op::Create, "k", at2, snap).await;
    assert_eq!(task_of(&r).key.as_deref(), Some("SYN-1"));
    drop(claim);
}

/// The refusal phase 1 answered, whether as the item's error or as its answer.
fn refusal(r: callsign_storage::Result<Phase1>) -> Option<Refusal> {
    match r {
        Err(e) => panic!("phase 1 failed: {e}"),
        Ok(Phase1::Refused(why)) => Some(why),
        Ok(_) => None,
    }
}

pub async fn concurrent_creates_take_every_number_once(b: Backend) {
    let a = account(&b, "SYN").await;
    let b = Arc::new(b);
    let mut joins = Vec::new();
    for i in 0..64 {
        let b = b.clone();
        joins.push(tokio::spawn(async move {
            let u = Uuid::new_v4();
            let r = create(&b, a, &format!("c{i}"), u, &new_task("SYN", "c")).await;
            (u, task_of(&r.reply()).number.unwrap())
        }));
    }
    let mut numbers = BTreeSet::new();
    let mut uuids = BTreeSet::new();
    for j in joins {
        let (u, n) = j.await.unwrap();
        assert!(numbers.insert(n), "number {n} given twice");
        uuids.insert(u);
    }
    assert_eq!(numbers, (1..=64).collect::<BTreeSet<u64>>());
    assert_eq!(uuids.len(), 64);
}

/// One batch through phase 1, the task store and one commit: creates in two projects, one
/// UUID under two keys (same body), a refusal and a repeat of an answered key mixed in. Each
/// project numbers its tasks in batch order, the UUID gets one number, the feed one entry.
pub async fn a_batch_numbers_each_project_in_order_and_each_task_once(b: Backend) {
    let a = account(&b, "SYN").await;
    let p = Prefix::parse("OPS").unwrap();
    b.alloc.create_project(a, "Ops", &p).await.unwrap().unwrap();
    let early = Uuid::new_v4();
    create(&b, a, "early", early, &new_task("SYN", "early"))
        .await
        .reply();
    let u: Vec<Uuid> = (0..5).map(|_| Uuid::new_v4()).collect();
    let body = |i: usize, prefix: &str| new_task(prefix, &format!("t{i}"));
    let items = [
        ("k0", u[0], body(0, "SYN")),
        ("k1", u[1], body(1, "OPS")),
        ("k2", u[2], body(2, "SYN")),
        ("k3", u[0], body(0, "SYN")),  // the same task under another key
        ("k4", u[3], body(3, "NOPE")), // no such project
        ("early", early, new_task("SYN", "early")), // answered before: a replay
        ("k5", u[4], body(4, "OPS")),
    ];
    let ms: Vec<Mutation> = items.iter().map(|(k, u, t)| mutation(k, *u, t)).collect();
    let decided = b.alloc.phase1(a, Op::Create, &ms, now_ms()).await;
    let mut go = Vec::new();
    let mut claims = Vec::new();
    let mut early_replay = None;
    for ((k, uuid, t), d) in items.iter().zip(decided) {
        match d.unwrap() {
            Phase1::Proceed(at, c) => {
                claims.push(c);
                go.push((k.to_string(), at, *uuid, t.clone()));
            }
            Phase1::Refused(why) => {
                assert_eq!(*k, "k4");
                assert!(matches!(why, Refusal::NoProject(_)), "{why:?}");
            }
            Phase1::Replay(r) => {
                assert_eq!(*k, "early");
                early_replay = Some(r);
            }
        }
    }
    let replay = early_replay.expect("the answered key replays");
    assert!(replay.replayed);
    assert_eq!(task_of(&replay).key.as_deref(), Some("SYN-1"));
    assert_eq!(go.len(), 5, "k0 k1 k2 k3 k5 go on");
    let snaps = b
        .tasks
        .create(a, go.iter().map(|g| (g.2, g.3.clone())).collect())
        .await
        .unwrap();
    let work = go
        .iter()
        .zip(snaps)
        .map(|(g, snapshot)| Commit {
            idem: g.0.clone(),
            at: g.1,
            snapshot,
        })
        .collect();
    let out = b
        .alloc
        .commit(a, Op::Create, work, now_ms(), render())
        .await
        .unwrap();
    let keys: Vec<(u16, Option<String>)> = out
        .iter()
        .map(|r| {
            let r = r.as_ref().unwrap();
            (r.status, task_of(r).key)
        })
        .collect();
    let k = |s: &str| Some(s.to_owned());
    assert_eq!(
        keys,
        vec![
            (201, k("SYN-2")),
            (201, k("OPS-1")),
            (201, k("SYN-3")),
            (200, k("SYN-2")),
            (201, k("OPS-2")),
        ]
    );
    drop(claims);
    let (feed, _) = b.alloc.changes_since(a, 0, 100).await.unwrap();
    let mut tasks: Vec<Uuid> = feed.iter().map(|r| r.task_uuid).collect();
    tasks.sort();
    let mut want = vec![early, u[0], u[1], u[2], u[4]];
    want.sort();
    assert_eq!(tasks, want, "one feed entry per task");
    // A retry of any of them replays its answer.
    let again = create(&b, a, "k2", u[2], &body(2, "SYN")).await.reply();
    assert!(again.replayed);
    assert_eq!(task_of(&again).key.as_deref(), Some("SYN-3"));
}

pub async fn updates_need_a_committed_create(b: Backend) {
    let a = account(&b, "SYN").await;
    let patch = TaskPatch {
        status: Some(TaskStatus::Completed),
        ..TaskPatch::default()
    };
    let update = |idem: &str, uuid: Uuid| Mutation {
        idem: idem.to_owned(),
        uuid,
        parent: None,
        fp: fingerprint("update", uuid, &patch),
        request: serde_json::to_string(&patch).unwrap(),
    };
    // Unknown task: 404.
    let r = b
        .alloc
        .phase1(a, Op::Update, &[update("u0", Uuid::new_v4())], now_ms())
        .await;
    match r.into_iter().next().unwrap() {
        Ok(Phase1::Refused(Refusal::NotUpdatable { reserved, .. })) => assert!(!reserved),
        other => panic!("{other:?}"),
    }
    // Reserved, not committed: 409 task_not_committed.
    let u = Uuid::new_v4();
    let body = new_task("SYN", "x");
    let p = b
        .alloc
        .phase1(a, Op::Create, &[mutation("c", u, &body)], now_ms())
        .await;
    let Ok(Phase1::Proceed(at, claim)) = p.into_iter().next().unwrap() else {
        panic!()
    };
    let r = b
        .alloc
        .phase1(a, Op::Update, &[update("u1", u)], now_ms())
        .await;
    match r.into_iter().next().unwrap() {
        Ok(Phase1::Refused(Refusal::NotUpdatable { reserved, .. })) => assert!(reserved),
        other => panic!("{other:?}"),
    }
    let snap = b
        .tasks
        .create(a, vec![(u, body)])
        .await
        .unwrap()
        .pop()
        .unwrap();
    commit(&b, a, Op::Create, "c", at, snap).await;
    drop(claim);
    // Committed: the update goes on and answers the task with its key.
    let r = b
        .alloc
        .phase1(a, Op::Update, &[update("u2", u)], now_ms())
        .await;
    let Ok(Phase1::Proceed(at, _claim)) = r.into_iter().next().unwrap() else {
        panic!()
    };
    let snap = b
        .tasks
        .update(a, vec![(u, patch.clone())])
        .await
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
    assert!(snap.reflects(&patch));
    let r = commit(&b, a, Op::Update, "u2", at, snap).await;
    assert_eq!(r.status, 200);
    let t = task_of(&r);
    assert_eq!(t.key.as_deref(), Some("SYN-1"));
    assert_eq!(t.status, TaskStatus::Completed);
}

pub async fn the_feed_has_one_entry_per_task_in_commit_order(b: Backend) {
    let a = account(&b, "SYN").await;
    let other = account(&b, "SYN").await;
    let mut uuids = Vec::new();
    for i in 0..5 {
        let u = Uuid::new_v4();
        uuids.push(u);
        create(&b, a, &format!("k{i}"), u, &new_task("SYN", "x"))
            .await
            .reply();
    }
    create(&b, other, "k0", Uuid::new_v4(), &new_task("SYN", "x"))
        .await
        .reply();
    let (rows, more) = b.alloc.changes_since(a, 0, 100).await.unwrap();
    assert!(!more);
    assert_eq!(rows.iter().map(|r| r.task_uuid).collect::<Vec<_>>(), uuids);
    assert!(rows.windows(2).all(|w| w[0].seq < w[1].seq));
    // An update moves the task to the end, and it is listed once.
    let patch = TaskPatch {
        description: Some("edited".into()),
        ..TaskPatch::default()
    };
    let m = Mutation {
        idem: "u".into(),
        uuid: uuids[1],
        parent: None,
        fp: fingerprint("update", uuids[1], &patch),
        request: serde_json::to_string(&patch).unwrap(),
    };
    let p = b.alloc.phase1(a, Op::Update, &[m], now_ms()).await;
    let Ok(Phase1::Proceed(at, _c)) = p.into_iter().next().unwrap() else {
        panic!()
    };
    let snap = b
        .tasks
        .update(a, vec![(uuids[1], patch)])
        .await
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
    let r = commit(&b, a, Op::Update, "u", at, snap).await;
    let cursor = rows.last().unwrap().seq;
    let (after, _) = b.alloc.changes_since(a, cursor, 100).await.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].task_uuid, uuids[1]);
    assert_eq!(Some(after[0].seq), r.change);
    let (all, _) = b.alloc.changes_since(a, 0, 100).await.unwrap();
    assert_eq!(all.len(), 5, "one entry per task");
    assert_eq!(all.last().unwrap().task_uuid, uuids[1]);
    // Pages.
    let (page, more) = b.alloc.changes_since(a, 0, 2).await.unwrap();
    assert_eq!(page.len(), 2);
    assert!(more);
    let (rest, more) = b.alloc.changes_since(a, page[1].seq, 10).await.unwrap();
    assert_eq!(rest.len(), 3);
    assert!(!more);
}

pub async fn keys_resolve_within_their_account(b: Backend) {
    let a = account(&b, "SYN").await;
    let other = account(&b, "OPS").await;
    let u = Uuid::new_v4();
    create(&b, a, "k", u, &new_task("SYN", "x")).await.reply();
    assert_eq!(b.alloc.uuid_for_key(a, "SYN", "", 1).await.unwrap(), Ok(u));
    assert_eq!(
        b.alloc.uuid_for_key(a, "SYN", "", 2).await.unwrap(),
        Err(true)
    );
    assert_eq!(
        b.alloc.uuid_for_key(a, "ZZZ", "", 1).await.unwrap(),
        Err(false)
    );
    assert_eq!(
        b.alloc.uuid_for_key(other, "SYN", "", 1).await.unwrap(),
        Err(false)
    );
    assert!(b.alloc.task_reserved(a, u).await.unwrap());
    assert!(!b.alloc.task_reserved(other, u).await.unwrap());
    let meta = b.alloc.task_meta(a, vec![u, Uuid::new_v4()]).await.unwrap();
    assert_eq!(meta.len(), 1);
    let m = &meta[&u];
    assert_eq!(m.prefix, "SYN");
    assert_eq!(m.key.as_ref().unwrap().key(), "SYN-1");
    assert_eq!(m.parent, None);
}

pub async fn the_reaper_fails_an_expired_slot_and_frees_its_uuid(b: Backend) {
    let a = account(&b, "SYN").await;
    let u = Uuid::new_v4();
    let body = new_task("SYN", "lost");
    let p = b
        .alloc
        .phase1(a, Op::Create, &[mutation("k", u, &body)], now_ms() - 10_000)
        .await;
    let Ok(Phase1::Proceed(_, claim)) = p.into_iter().next().unwrap() else {
        panic!()
    };
    drop(claim);
    let pending = b.alloc.pending_slots(now_ms(), 100).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].idem_key, "k");
    assert_eq!(pending[0].task_uuid, u);
    assert!(b
        .alloc
        .pending_slots(now_ms() - 20_000, 100)
        .await
        .unwrap()
        .is_empty());
    let (_, pending_count) = b.alloc.retry_stats(0).await.unwrap();
    assert_eq!(pending_count, 1);
    assert!(b.alloc.fail_slot(a, "k", u, now_ms()).await.unwrap());
    assert!(
        !b.alloc.fail_slot(a, "k", u, now_ms()).await.unwrap(),
        "once"
    );
    assert!(
        !b.alloc.task_reserved(a, u).await.unwrap(),
        "the UUID is free again"
    );
    assert!(b
        .alloc
        .pending_slots(now_ms(), 100)
        .await
        .unwrap()
        .is_empty());
    // The key is new again, and no number was taken by the failure.
    let r = create(&b, a, "k", u, &body).await.reply();
    assert_eq!(task_of(&r).key.as_deref(), Some("SYN-1"));
}

pub async fn keys_not_in_store_until_marked(b: Backend) {
    let a = account(&b, "SYN").await;
    let u = Uuid::new_v4();
    create(&b, a, "k", u, &new_task("SYN", "x")).await.reply();
    let missing = b.alloc.keys_not_in_store(now_ms() + 1, 100).await.unwrap();
    assert_eq!(missing, vec![(a, u, "SYN-1".to_owned())]);
    b.alloc
        .mark_in_store(a, vec![(u, "SYN-1".to_owned())])
        .await
        .unwrap();
    assert!(b
        .alloc
        .keys_not_in_store(now_ms() + 1, 100)
        .await
        .unwrap()
        .is_empty());
}

pub async fn purged_slots_leave_a_tombstone_and_keys_hold(b: Backend) {
    let a = account(&b, "SYN").await;
    let u = Uuid::new_v4();
    let body = new_task("SYN", "x");
    create(&b, a, "k", u, &body).await.reply();
    create(&b, a, "k2", Uuid::new_v4(), &body).await.reply();
    let purged = b
        .alloc
        .purge_settled(now_ms() + 1, 1, now_ms())
        .await
        .unwrap();
    assert_eq!(purged, 1, "at most the limit");
    let purged = b
        .alloc
        .purge_settled(now_ms() + 1, 100, now_ms())
        .await
        .unwrap();
    assert_eq!(purged, 1);
    assert_eq!(
        b.alloc
            .purge_settled(now_ms() + 1, 100, now_ms())
            .await
            .unwrap(),
        0
    );
    // A retry after the purge: a new request, but the UUID keeps its key (G1).
    let r = create(&b, a, "k", u, &body).await.reply();
    assert!(!r.replayed);
    assert_eq!(r.status, 200);
    assert_eq!(task_of(&r).key.as_deref(), Some("SYN-1"));
    // The late retry is evidence for the window.
    let w = b
        .alloc
        .update_window(
            Setting::Auto {
                min: std::time::Duration::from_millis(1),
                max: std::time::Duration::from_secs(7 * 86_400),
            },
            1,
            0,
            now_ms(),
        )
        .await
        .unwrap();
    assert!(
        w.late_ms.is_some(),
        "a retry after the purge is late: {w:?}"
    );
    // Tombstones go after their period.
    b.alloc
        .purge_settled(now_ms() + 1, 100, now_ms())
        .await
        .unwrap();
    assert!(b.alloc.forget_purged(now_ms() + 1, 100).await.unwrap() >= 1);
    let r = create(&b, a, "k3", Uuid::new_v4(), &body).await.reply();
    assert_eq!(
        task_of(&r).key.as_deref(),
        Some("SYN-3"),
        "no number reused"
    );
}

pub async fn the_window_is_stored(b: Backend) {
    assert_eq!(b.alloc.window_in_force().await.unwrap(), None);
    let setting = Setting::Auto {
        min: std::time::Duration::from_secs(3600),
        max: std::time::Duration::from_secs(7200),
    };
    let w = b
        .alloc
        .update_window(setting, 0, 0, now_ms())
        .await
        .unwrap();
    assert_eq!(w.ms, 3_600_000);
    let (ms, basis) = b.alloc.window_in_force().await.unwrap().unwrap();
    assert_eq!(ms, w.ms);
    assert_eq!(basis, w.basis);
}

pub async fn the_task_store_keeps_tasks(b: Backend) {
    let a = account(&b, "SYN").await;
    let u = Uuid::new_v4();
    let mut body = new_task("SYN", "write the report");
    body.notes = "by friday".into();
    body.tags = vec!["work".into(), "alpha".into()];
    let s = b
        .tasks
        .create(a, vec![(u, body.clone())])
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(s.uuid, u);
    assert_eq!(s.description, "write the report");
    assert_eq!(s.notes, "by friday");
    assert_eq!(s.tags, ["alpha", "work"]);
    assert_eq!(s.status, TaskStatus::Pending);
    assert_eq!(s.key, None);
    // Creating it again changes nothing.
    let again = b
        .tasks
        .create(a, vec![(u, new_task("SYN", "other"))])
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(again.description, "write the report");
    b.tasks
        .set_keys(a, vec![(u, "SYN-1".into())])
        .await
        .unwrap();
    let patch = TaskPatch {
        status: Some(TaskStatus::Completed),
        tags: Some(vec!["done".into()]),
        ..TaskPatch::default()
    };
    let s = b
        .tasks
        .update(a, vec![(u, patch.clone()), (Uuid::new_v4(), patch.clone())])
        .await
        .unwrap();
    assert!(s[1].is_none(), "a task the store does not hold");
    let s = s[0].clone().unwrap();
    assert!(s.reflects(&patch));
    let got = b.tasks.get(a, vec![u, Uuid::new_v4()]).await.unwrap();
    assert_eq!(got[0].as_ref(), Some(&s));
    assert_eq!(s.key.as_deref(), Some("SYN-1"));
    assert_eq!(s.status, TaskStatus::Completed);
    assert_eq!(s.tags, ["done"]);
    assert!(got[1].is_none());
    // Accounts are apart.
    let other = account(&b, "OPS").await;
    assert!(b.tasks.get(other, vec![u]).await.unwrap()[0].is_none());
    let (running, failing) = b.tasks.health();
    assert!(running);
    assert!(failing.is_empty());
}

/// `due` and `priority` as Taskwarrior names them: kept on create, set and cleared by a patch
/// (`null` clears, absent leaves), read back the same by `get`. A due time is kept to the
/// second (Taskwarrior stores Unix seconds).
pub async fn due_and_priority_are_kept_set_and_cleared(b: Backend) {
    use chrono::{TimeZone, Utc};
    let a = account(&b, "SYN").await;
    let u = Uuid::new_v4();
    let due = Utc.with_ymd_and_hms(2026, 12, 1, 9, 30, 0).unwrap();
    let mut body = new_task("SYN", "pay rent");
    body.due = Some(due + chrono::Duration::milliseconds(250));
    body.priority = Some(Priority::M);
    let s = b
        .tasks
        .create(a, vec![(u, body)])
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!((s.due, s.priority), (Some(due), Some(Priority::M)));
    // Another field changes: due and priority stay.
    let notes = TaskPatch {
        notes: Some("by transfer".into()),
        ..TaskPatch::default()
    };
    let s = b.tasks.update(a, vec![(u, notes)]).await.unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!((s.due, s.priority), (Some(due), Some(Priority::M)));
    let later = due + chrono::Duration::days(2);
    let patch = TaskPatch {
        due: Some(Some(later)),
        priority: Some(None),
        ..TaskPatch::default()
    };
    let s = b.tasks.update(a, vec![(u, patch.clone())]).await.unwrap()[0]
        .clone()
        .unwrap();
    assert!(s.reflects(&patch));
    assert_eq!((s.due, s.priority), (Some(later), None));
    let clear = TaskPatch {
        due: Some(None),
        priority: Some(Some(Priority::H)),
        ..TaskPatch::default()
    };
    let s = b.tasks.update(a, vec![(u, clear.clone())]).await.unwrap()[0]
        .clone()
        .unwrap();
    assert!(s.reflects(&clear) && !s.reflects(&patch));
    assert_eq!((s.due, s.priority), (None, Some(Priority::H)));
    let got = b.tasks.get(a, vec![u]).await.unwrap()[0].clone();
    assert_eq!(got, Some(s));
}

/// Two devices' patches, each with the base it saw: different fields both land; the same field
/// keeps the later patch and records the value it replaced; tags merge as a set; the record
/// survives a read, and goes when the value is restored or the field resolved. Applying a
/// patch twice (a resumed slot) records nothing twice.
pub async fn concurrent_edits_merge_field_by_field_and_keep_conflicts(b: Backend) {
    let a = account(&b, "SYN").await;
    let u = Uuid::new_v4();
    let s = b
        .tasks
        .create(a, vec![(u, new_task("SYN", "Ship it"))])
        .await
        .unwrap();
    assert!(s[0].conflicts.is_empty());
    let patch = |v: serde_json::Value| serde_json::from_value::<TaskPatch>(v).unwrap();
    // Both devices saw "Ship it" and tags [t]. A: description and +a; B: notes, description, +b.
    let from_a = patch(
        serde_json::json!({"description": "Ship it today", "tags": ["t", "a"],
        "base": {"description": "Ship it", "tags": ["t"]}}),
    );
    let from_b = patch(
        serde_json::json!({"notes": "after review", "description": "Ship it Monday",
        "tags": ["t", "b"], "base": {"notes": "", "description": "Ship it", "tags": ["t"]}}),
    );
    let update = |p: TaskPatch| {
        let tasks = b.tasks.clone();
        async move {
            tasks.update(a, vec![(u, p)]).await.unwrap()[0]
                .clone()
                .unwrap()
        }
    };
    update(from_a).await;
    let s = update(from_b.clone()).await;
    assert_eq!(
        (s.description.as_str(), s.notes.as_str(), s.tags.clone()),
        (
            "Ship it Monday",
            "after review",
            vec!["a".to_owned(), "b".into(), "t".into()]
        ),
        "the later description wins, the notes and both tags survive"
    );
    let recorded: Vec<_> = s
        .conflicts
        .iter()
        .map(|c| (c.field, c.value.clone()))
        .collect();
    assert_eq!(
        recorded,
        [(
            callsign_core::merge::Field::Description,
            serde_json::json!("Ship it today")
        )]
    );
    assert!(s.reflects(&from_b));
    // Again (a resumed slot): the same task, one conflict.
    let again = update(from_b).await;
    assert_eq!(again.conflicts.len(), 1);
    let read = b.tasks.get(a, vec![u]).await.unwrap()[0].clone().unwrap();
    assert_eq!(read.conflicts, again.conflicts, "kept in the store");
    // Restored: the value is back, the record gone.
    let restore = patch(serde_json::json!({"description": "Ship it today",
        "base": {"description": "Ship it Monday"}}));
    let s = update(restore).await;
    assert_eq!(
        (s.description.as_str(), s.conflicts.len()),
        ("Ship it today", 0)
    );
    // A new conflict, then resolved by keeping what is there.
    let late = patch(serde_json::json!({"notes": "n2", "base": {"notes": "stale"}}));
    let s = update(late).await;
    assert_eq!(s.conflicts.len(), 1);
    let keep = patch(serde_json::json!({"resolve": ["notes"]}));
    assert!(!s.reflects(&keep));
    let s = update(keep.clone()).await;
    assert!(s.conflicts.is_empty() && s.reflects(&keep));
    assert_eq!(s.notes, "n2");
}

/// Commit links: a create's are kept, a patch's links of other commits add to them (each its
/// own property, so concurrent links of different commits both stay), a link of the same hash
/// replaces its link, an unlink removes one; a read gives them oldest first, and none records
/// a conflict.
pub async fn commit_links_are_kept_one_per_commit(b: Backend) {
    use callsign_core::dto::{CommitAction, CommitLink};
    let link = |hash: char, secs: i64, subject: &str| CommitLink {
        hash: hash.to_string().repeat(40),
        subject: subject.into(),
        author: "Ann <ann@example.com>".into(),
        at: chrono::DateTime::from_timestamp(1_770_000_000 + secs, 0).unwrap(),
        action: CommitAction::Refs,
        comment: None,
    };
    let a = account(&b, "SYN").await;
    let u = Uuid::new_v4();
    let mut body = new_task("SYN", "Fix login");
    body.commits = vec![link('a', 20, "a")];
    let s = b.tasks.create(a, vec![(u, body)]).await.unwrap();
    assert_eq!(s[0].commits, [link('a', 20, "a")]);
    let update = |p: TaskPatch| {
        let tasks = b.tasks.clone();
        async move {
            tasks.update(a, vec![(u, p)]).await.unwrap()[0]
                .clone()
                .unwrap()
        }
    };
    let from_a = TaskPatch {
        commits: vec![link('b', 10, "b")],
        ..TaskPatch::default()
    };
    let from_b = TaskPatch {
        commits: vec![link('c', 30, "c"), link('a', 20, "a amended")],
        ..TaskPatch::default()
    };
    update(from_a.clone()).await;
    let s = update(from_b.clone()).await;
    assert_eq!(
        s.commits,
        [
            link('b', 10, "b"),
            link('a', 20, "a amended"),
            link('c', 30, "c")
        ]
    );
    assert!(s.reflects(&from_a) && s.reflects(&from_b) && s.conflicts.is_empty());
    let unlink = TaskPatch {
        unlink_commits: vec!["b".repeat(40)],
        ..TaskPatch::default()
    };
    assert!(!s.reflects(&unlink));
    let s = update(unlink.clone()).await;
    assert!(s.reflects(&unlink) && !s.reflects(&from_a));
    let read = b.tasks.get(a, vec![u]).await.unwrap()[0].clone().unwrap();
    assert_eq!(
        read.commits,
        [link('a', 20, "a amended"), link('c', 30, "c")]
    );
}

/// Creates a batch: phase 1 for all, the tasks, then one commit; the answers in order.
async fn create_batch(
    b: &Backend,
    account: AccountId,
    items: &[(&str, Uuid, NewTask, Option<Uuid>)],
) -> Vec<Reply> {
    let ms: Vec<Mutation> = items
        .iter()
        .map(|(k, u, t, parent)| Mutation {
            parent: *parent,
            ..mutation(k, *u, t)
        })
        .collect();
    let decided = b.alloc.phase1(account, Op::Create, &ms, now_ms()).await;
    let mut work = Vec::new();
    let mut claims = Vec::new();
    for ((k, u, t, _), d) in items.iter().zip(decided) {
        let Phase1::Proceed(at, claim) = d.unwrap() else {
            panic!("{k} did not proceed");
        };
        claims.push(claim);
        let snapshot = b
            .tasks
            .create(account, vec![(*u, t.clone())])
            .await
            .unwrap()[0]
            .clone();
        work.push(Commit {
            idem: k.to_string(),
            at,
            snapshot,
        });
    }
    let out = b
        .alloc
        .commit(account, Op::Create, work, now_ms(), render())
        .await
        .unwrap();
    out.into_iter().map(|r| r.unwrap()).collect()
}

fn key_of(r: &Reply) -> String {
    serde_json::from_str::<Task>(&r.body).unwrap().key.unwrap()
}

/// A subtask takes the next number of its parent's own counter (`SYN-1.1`, `SYN-1.2`,
/// `SYN-1.1.1`), apart from the project's counter and from other parents'; a batch numbers
/// each counter in order; the key resolves; the parent and children are recorded.
pub async fn subtasks_number_under_their_parent_without_gaps(b: Backend) {
    let a = account(&b, "SYN").await;
    let [p1, p2] = [Uuid::new_v4(), Uuid::new_v4()];
    create(&b, a, "p1", p1, &new_task("SYN", "parent one"))
        .await
        .reply();
    create(&b, a, "p2", p2, &new_task("SYN", "parent two"))
        .await
        .reply();
    let kids: Vec<Uuid> = (0..5).map(|_| Uuid::new_v4()).collect();
    let t = |d: &str| new_task("SYN", d);
    let answers = create_batch(
        &b,
        a,
        &[
            ("c0", kids[0], t("c0"), Some(p1)),
            ("c1", kids[1], t("c1"), Some(p2)),
            ("r0", kids[2], t("r0"), None),
            ("c2", kids[3], t("c2"), Some(p1)),
        ],
    )
    .await;
    let keys: Vec<String> = answers.iter().map(key_of).collect();
    assert_eq!(keys, ["SYN-1.1", "SYN-2.1", "SYN-3", "SYN-1.2"]);
    let task: Task = serde_json::from_str(&answers[0].body).unwrap();
    assert_eq!((task.parent, task.number), (Some(p1), Some(1)));
    // A grandchild numbers under SYN-1.1; the project's counter is untouched by subtasks.
    let grand = create_batch(&b, a, &[("g0", kids[4], t("g0"), Some(kids[0]))]).await;
    assert_eq!(key_of(&grand[0]), "SYN-1.1.1");
    let next = Uuid::new_v4();
    let r = create(&b, a, "next", next, &t("next")).await.reply();
    assert_eq!(key_of(&r), "SYN-4");
    // A later child continues its parent's counter.
    let again = create_batch(&b, a, &[("c9", Uuid::new_v4(), t("c9"), Some(p1))]).await;
    assert_eq!(key_of(&again[0]), "SYN-1.3");
    // Keys resolve by their scope.
    assert_eq!(
        b.alloc.uuid_for_key(a, "SYN", "1", 2).await.unwrap(),
        Ok(kids[3])
    );
    assert_eq!(
        b.alloc.uuid_for_key(a, "SYN", "1.1", 1).await.unwrap(),
        Ok(kids[4])
    );
    assert_eq!(
        b.alloc.uuid_for_key(a, "SYN", "1", 9).await.unwrap(),
        Err(true)
    );
    assert_eq!(b.alloc.uuid_for_key(a, "SYN", "", 1).await.unwrap(), Ok(p1));
    let children = b.alloc.children(a, vec![p1, p2, next]).await.unwrap();
    assert_eq!(children.len(), 2, "{children:?}");
    assert_eq!(children[&p2], vec![kids[1]]);
    let mut of_p1 = children[&p1].clone();
    of_p1.sort();
    let mut want = vec![
        kids[0],
        kids[3],
        serde_json::from_str::<Task>(&again[0].body).unwrap().uuid,
    ];
    want.sort();
    assert_eq!(of_p1, want);
    let meta = b.alloc.task_meta(a, vec![kids[4]]).await.unwrap();
    assert_eq!(meta[&kids[4]].parent, Some(kids[0]));
    assert_eq!(meta[&kids[4]].key.as_ref().unwrap().key(), "SYN-1.1.1");
}

/// Phase 1, the task store and phase 2 for one update (`None`: phase 1 answered).
async fn update_one(
    b: &Backend,
    account: AccountId,
    idem: &str,
    uuid: Uuid,
    patch: &TaskPatch,
) -> Reply {
    try_update_one(b, account, idem, uuid, patch).await.unwrap()
}

/// The whole update protocol for one task, with the commit's own outcome.
async fn try_update_one(
    b: &Backend,
    account: AccountId,
    idem: &str,
    uuid: Uuid,
    patch: &TaskPatch,
) -> callsign_storage::Result<Reply> {
    let m = Mutation {
        idem: idem.to_owned(),
        uuid,
        parent: None,
        fp: fingerprint("update", uuid, patch),
        request: serde_json::to_string(patch).unwrap(),
    };
    // `in_progress` is the claim of an attempt that just failed (PostgreSQL releases it off the
    // caller's path): as a device does, try again shortly (bounded).
    let mut tries = 0;
    let (at, _claim) = loop {
        match b
            .alloc
            .phase1(account, Op::Update, std::slice::from_ref(&m), now_ms())
            .await
            .pop()
        {
            Some(Ok(Phase1::Proceed(at, claim))) => break (at, claim),
            Some(Ok(Phase1::Replay(r))) => return Ok(r),
            Some(Ok(Phase1::Refused(Refusal::InProgress))) if tries < 250 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            other => panic!("{idem}: {other:?}"),
        }
    };
    let snap = b
        .tasks
        .update(account, vec![(uuid, patch.clone())])
        .await
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
    try_commit(b, account, Op::Update, idem, at, snap).await
}

/// A move takes the next number of the other project; the subtasks are numbered anew under
/// the new key, in their old order; every old key still names its task and is listed as a
/// previous key; a replay answers the same key; moving back takes a new number again (the
/// old one is never reused); a subtask created under the old key after the move numbers under
/// the new one.
pub async fn a_move_renumbers_the_task_and_its_subtasks_and_keeps_the_old_keys(b: Backend) {
    let a = account(&b, "SYN").await;
    ops_project(&b, a).await;
    let t = |d: &str| new_task("SYN", d);
    let [first, parent, other] = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    create(&b, a, "first", first, &t("first")).await.reply();
    create(&b, a, "parent", parent, &t("parent")).await.reply();
    create(&b, a, "ops", other, &new_task("OPS", "in ops"))
        .await
        .reply();
    let kids: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    create_batch(
        &b,
        a,
        &[
            ("k0", kids[0], t("k0"), Some(parent)),
            ("k1", kids[1], t("k1"), Some(parent)),
        ],
    )
    .await;
    create_batch(&b, a, &[("k2", kids[2], t("k2"), Some(kids[1]))]).await;

    let to_ops = TaskPatch {
        // As the API stores it: normalised (`api::tasks::prepare_update`).
        project: Some("OPS".into()),
        ..TaskPatch::default()
    };
    let r = update_one(&b, a, "move", parent, &to_ops).await;
    let moved = task_of(&r);
    assert_eq!(
        (moved.key.as_deref(), moved.project.as_str()),
        (Some("OPS-2"), "OPS")
    );
    assert_eq!(moved.previous_keys, ["SYN-2"]);
    let again = update_one(&b, a, "move", parent, &to_ops).await;
    assert!(again.replayed);
    assert_eq!(task_of(&again).key.as_deref(), Some("OPS-2"));

    let meta = b.alloc.task_meta(a, kids.clone()).await.unwrap();
    let keys: Vec<String> = kids
        .iter()
        .map(|k| meta[k].key.as_ref().unwrap().key())
        .collect();
    assert_eq!(keys, ["OPS-2.1", "OPS-2.2", "OPS-2.2.1"]);
    assert_eq!(meta[&kids[2]].previous, ["SYN-2.2.1"]);
    for (prefix, scope, n, want) in [
        ("SYN", "", 2, parent),
        ("SYN", "2", 2, kids[1]),
        ("SYN", "2.2", 1, kids[2]),
        ("OPS", "2", 1, kids[0]),
    ] {
        assert_eq!(
            b.alloc.uuid_for_key(a, prefix, scope, n).await.unwrap(),
            Ok(want)
        );
    }
    // Back to SYN: a new number there; SYN-2 stays the old key.
    let back = TaskPatch {
        project: Some("SYN".into()),
        ..TaskPatch::default()
    };
    let r = update_one(&b, a, "back", parent, &back).await;
    let home = task_of(&r);
    assert_eq!(home.key.as_deref(), Some("SYN-3"));
    assert_eq!(home.previous_keys, ["SYN-2", "OPS-2"]);
    // A subtask created under the parent by an old key lands under its current one.
    let late = Uuid::new_v4();
    let r = create_batch(
        &b,
        a,
        &[("late", late, new_task("OPS", "late"), Some(parent))],
    )
    .await;
    let late_task = task_of(&r[0]);
    assert_eq!(
        (late_task.key.as_deref(), late_task.project.as_str()),
        (Some("SYN-3.3"), "SYN")
    );
    // Its reservation follows too (the project a rename or a move of the tree looks at).
    let meta = b.alloc.task_meta(a, vec![late]).await.unwrap();
    assert_eq!(meta[&late].prefix, "SYN");
    // The project counters went on without gaps: SYN 1..3, OPS 1..2.
    let next = create(&b, a, "next", Uuid::new_v4(), &t("next"))
        .await
        .reply();
    assert_eq!(key_of(&next), "SYN-4");
}

/// A rename moves a project's prefix: numbers stay (SYN-1 becomes SYX-1, SYN-1.1 SYX-1.1),
/// each task still in the project gets a feed entry and its key is to be written again; every
/// key a task had still names it, by exactly the prefixes it had (a task moved away before the
/// rename was never SYX-2, one numbered after it never SYN-3); the counter continues; the old
/// prefix still names the project for creates and moves; no other project can take a prefix
/// one had, but a project can take back its own; a name changes alone.
pub async fn a_rename_moves_the_prefix_and_every_old_key_still_resolves(b: Backend) {
    use callsign_storage::Renamed;
    let a = account(&b, "SYN").await;
    let p = |s: &str| Prefix::parse(s).unwrap();
    b.alloc
        .create_project(a, "Ops", &p("OPS"))
        .await
        .unwrap()
        .unwrap();
    let [t1, s1, t2] = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    create(&b, a, "t1", t1, &new_task("SYN", "t1"))
        .await
        .reply();
    create_batch(&b, a, &[("s1", s1, new_task("SYN", "s1"), Some(t1))]).await;
    create(&b, a, "t2", t2, &new_task("SYN", "t2"))
        .await
        .reply();
    let to = |prefix: &str| TaskPatch {
        project: Some(prefix.into()),
        ..TaskPatch::default()
    };
    let r = update_one(&b, a, "t2-ops", t2, &to("OPS")).await;
    assert_eq!(key_of(&r), "OPS-1");
    let (feed, _) = b.alloc.changes_since(a, 0, 100).await.unwrap();
    let cursor = feed.last().unwrap().seq;
    b.alloc
        .mark_in_store(
            a,
            vec![
                (t1, "SYN-1".into()),
                (s1, "SYN-1.1".into()),
                (t2, "OPS-1".into()),
            ],
        )
        .await
        .unwrap();

    let rename = |from: &str, to_prefix: Option<&str>, name: Option<&str>| {
        let (from, to_prefix) = (p(from), to_prefix.map(p));
        let name = name.map(str::to_owned);
        let alloc = b.alloc.clone();
        async move {
            alloc
                .update_project(a, &from, to_prefix.as_ref(), name.as_deref(), now_ms())
                .await
                .unwrap()
        }
    };
    let Renamed::Done { project, mut keys } = rename("SYN", Some("SYX"), None).await else {
        panic!("renamed")
    };
    assert_eq!(
        (project.prefix.as_str(), project.previous_prefixes.clone()),
        ("SYX", vec!["SYN".to_owned()])
    );
    keys.sort_by(|x, y| x.1.cmp(&y.1));
    assert_eq!(keys, [(t1, "SYX-1".to_owned()), (s1, "SYX-1.1".to_owned())]);
    // Each task still in the project is in the feed after the cursor (one entry each), and its
    // key is to be written onto it again.
    let (after, more) = b.alloc.changes_since(a, cursor, 100).await.unwrap();
    let fed: BTreeSet<Uuid> = after.iter().map(|r| r.task_uuid).collect();
    assert_eq!((fed, more), (BTreeSet::from([t1, s1]), false));
    let missing: BTreeSet<(Uuid, String)> = b
        .alloc
        .keys_not_in_store(now_ms() + 1, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, u, k)| (u, k))
        .collect();
    assert_eq!(
        missing,
        BTreeSet::from([(t1, "SYX-1".to_owned()), (s1, "SYX-1.1".to_owned())])
    );
    // A key write that a rename made stale is not taken as done; the current one is.
    b.alloc
        .mark_in_store(a, vec![(t1, "SYN-1".into()), (s1, "SYX-1.1".into())])
        .await
        .unwrap();
    let missing = b.alloc.keys_not_in_store(now_ms() + 1, 100).await.unwrap();
    assert_eq!(missing, [(a, t1, "SYX-1".to_owned())]);

    let meta = b.alloc.task_meta(a, vec![t1, s1, t2]).await.unwrap();
    let names = |u: Uuid| {
        let m = &meta[&u];
        (m.key.as_ref().unwrap().key(), m.previous.clone())
    };
    assert_eq!(names(t1), ("SYX-1".into(), vec!["SYN-1".into()]));
    assert_eq!(names(s1), ("SYX-1.1".into(), vec!["SYN-1.1".into()]));
    assert_eq!(
        names(t2),
        ("OPS-1".into(), vec!["SYN-2".into()]),
        "moved away before the rename: never SYX-2"
    );
    assert_eq!(meta[&t1].prefix, "SYX");
    for (prefix, scope, n, want) in [
        ("SYN", "", 1, Ok(t1)),
        ("SYX", "", 1, Ok(t1)),
        ("SYN", "1", 1, Ok(s1)),
        ("SYX", "1", 1, Ok(s1)),
        ("SYN", "", 2, Ok(t2)),
        ("SYX", "", 2, Err(true)),
        ("OPS", "", 1, Ok(t2)),
    ] {
        assert_eq!(
            b.alloc.uuid_for_key(a, prefix, scope, n).await.unwrap(),
            want,
            "{prefix}-{scope}.{n}"
        );
    }

    // The counter goes on; the old prefix still names the project for a create and a move.
    let [t3, t4] = [Uuid::new_v4(), Uuid::new_v4()];
    let r = create(&b, a, "t3", t3, &new_task("SYX", "t3"))
        .await
        .reply();
    assert_eq!(
        (key_of(&r), task_of(&r).previous_keys),
        ("SYX-3".into(), vec![])
    );
    assert_eq!(
        b.alloc.uuid_for_key(a, "SYN", "", 3).await.unwrap(),
        Err(true),
        "numbered after the rename: never SYN-3"
    );
    let r = create(&b, a, "t4", t4, &new_task("SYN", "t4"))
        .await
        .reply();
    assert_eq!(
        (key_of(&r), task_of(&r).project),
        ("SYX-4".into(), "SYX".into())
    );
    let r = update_one(&b, a, "t2-back", t2, &to("SYN")).await;
    assert_eq!(
        (key_of(&r), task_of(&r).previous_keys),
        ("SYX-5".into(), vec!["SYN-2".into(), "OPS-1".into()])
    );
    let r = update_one(&b, a, "t2-stays", t2, &to("SYN")).await;
    assert_eq!(
        key_of(&r),
        "SYX-5",
        "an old prefix of its own project: no move"
    );

    // Refusals: a prefix that a project has or had belongs to it.
    assert_eq!(
        b.alloc.create_project(a, "Again", &p("SYN")).await.unwrap(),
        None
    );
    assert_eq!(
        rename("OPS", Some("SYN"), None).await,
        Renamed::Taken("SYX".into())
    );
    assert_eq!(
        rename("OPS", Some("SYX"), None).await,
        Renamed::Taken("SYX".into())
    );
    assert_eq!(
        rename("SYN", Some("ABC"), None).await,
        Renamed::NotFound(Some("SYX".into()))
    );
    assert_eq!(
        rename("ZZZ", Some("ABC"), None).await,
        Renamed::NotFound(None)
    );

    // A project takes back its own earlier prefix; the name changes alone, keys untouched.
    let Renamed::Done { project, .. } = rename("SYX", Some("SYN"), None).await else {
        panic!("taken back")
    };
    assert_eq!(project.previous_prefixes, ["SYX"]);
    let meta = b.alloc.task_meta(a, vec![t1, t3]).await.unwrap();
    assert_eq!(meta[&t1].key.as_ref().unwrap().key(), "SYN-1");
    assert_eq!(meta[&t1].previous, ["SYX-1"]);
    assert_eq!(meta[&t3].key.as_ref().unwrap().key(), "SYN-3");
    assert_eq!(meta[&t3].previous, ["SYX-3"]);
    assert_eq!(b.alloc.uuid_for_key(a, "SYX", "", 3).await.unwrap(), Ok(t3));
    let Renamed::Done { project, keys } = rename("syn", None, Some("Sync")).await else {
        panic!("named")
    };
    assert_eq!((project.name.as_str(), keys.len()), ("Sync", 0));
    let listed = b.alloc.list_projects(a).await.unwrap();
    let syn = listed.iter().find(|p| p.prefix == "SYN").unwrap();
    assert_eq!(
        (syn.name.as_str(), syn.previous_prefixes.clone()),
        ("Sync", vec!["SYX".into()])
    );
}

/// While a project recovers (docs/RECOVERY.md) no commit takes a number from its counter: a
/// create's commit fails alone with `Recovering` and leaves its slot pending, a move into it
/// fails too, while updates in it and other accounts go on. Starting again keeps the start;
/// ending one project leaves the others recovering; once recovery ends the pending create is
/// numbered with no gap (the refused attempts took nothing).
pub async fn a_recovering_project_numbers_nothing_until_recovery_ends(b: Backend) {
    let a = account(&b, "SYN").await;
    ops_project(&b, a).await;
    let other = account(&b, "SYN").await;
    let first = Uuid::new_v4();
    create(&b, a, "first", first, &new_task("SYN", "before"))
        .await
        .reply();

    let rows = b
        .alloc
        .start_recovery(Some(a), RecoveryReason::Declared, 1_000)
        .await
        .unwrap();
    let seen: Vec<(AccountId, &str, i64)> = rows
        .iter()
        .map(|r| (r.account, r.prefix.as_str(), r.last))
        .collect();
    assert_eq!(seen, [(a, "OPS", 0), (a, "SYN", 1)]);
    assert!(rows
        .iter()
        .all(|r| r.since == 1_000 && r.reason == RecoveryReason::Declared));
    let again = b
        .alloc
        .start_recovery(None, RecoveryReason::Restore, 2_000)
        .await
        .unwrap();
    let syn_of_a = again
        .iter()
        .find(|r| r.account == a && r.prefix == "SYN")
        .unwrap();
    assert_eq!(
        (syn_of_a.since, syn_of_a.reason),
        (1_000, RecoveryReason::Declared)
    );
    assert_eq!(
        again.len(),
        3,
        "the other account's project joined: {again:?}"
    );
    let ended = b.alloc.end_recovery(Some(other), None).await.unwrap();
    assert_eq!(ended.len(), 1);

    // A create in a recovering project: its commit fails alone, nothing numbered.
    let body = new_task("SYN", "during");
    let u = Uuid::new_v4();
    let m = mutation("during", u, &body);
    let Ok(Phase1::Proceed(at, claim)) = b
        .alloc
        .phase1(a, Op::Create, &[m], now_ms())
        .await
        .pop()
        .unwrap()
    else {
        panic!("phase 1 refused a create in a recovering project");
    };
    let snapshot = b.tasks.create(a, vec![(u, body.clone())]).await.unwrap()[0].clone();
    for _ in 0..2 {
        let out = try_commit(&b, a, Op::Create, "during", at, snapshot.clone()).await;
        assert!(
            matches!(&out, Err(callsign_storage::Error::Recovering { prefix }) if prefix == "SYN"),
            "{out:?}"
        );
    }
    let meta = b.alloc.task_meta(a, vec![u]).await.unwrap();
    assert!(meta[&u].key.is_none(), "reserved, not numbered");

    // The other account numbers on; an update in the recovering project goes on.
    let r = create(
        &b,
        other,
        "o1",
        Uuid::new_v4(),
        &new_task("SYN", "elsewhere"),
    )
    .await
    .reply();
    assert_eq!(key_of(&r), "SYN-1");
    let patch = TaskPatch {
        description: Some("edited while recovering".into()),
        ..TaskPatch::default()
    };
    let r = update_one(&b, a, "edit", first, &patch).await;
    assert_eq!(
        (task_of(&r).key.as_deref(), task_of(&r).description.as_str()),
        (Some("SYN-1"), "edited while recovering")
    );

    // A move into a recovering project takes no number there.
    let to_ops = TaskPatch {
        project: Some("OPS".into()),
        ..TaskPatch::default()
    };
    let out = try_update_one(&b, a, "move", first, &to_ops).await;
    assert!(
        matches!(&out, Err(callsign_storage::Error::Recovering { prefix }) if prefix == "OPS"),
        "{out:?}"
    );

    // Ending OPS leaves SYN recovering; ending the account's numbers the pending create next.
    let ops_ended = b
        .alloc
        .end_recovery(Some(a), Some(&Prefix::parse("OPS").unwrap()))
        .await
        .unwrap();
    assert_eq!(
        ops_ended
            .iter()
            .map(|r| r.prefix.as_str())
            .collect::<Vec<_>>(),
        ["OPS"]
    );
    let left = b.alloc.recovering().await.unwrap();
    assert_eq!(
        left.iter()
            .map(|r| (r.account, r.prefix.as_str()))
            .collect::<Vec<_>>(),
        [(a, "SYN")]
    );
    b.alloc.end_recovery(Some(a), None).await.unwrap();
    assert!(b.alloc.recovering().await.unwrap().is_empty());
    let r = try_commit(&b, a, Op::Create, "during", at, snapshot)
        .await
        .unwrap();
    drop(claim);
    assert_eq!((r.status, key_of(&r)), (201, "SYN-2".to_owned()), "no gap");
}

/// A witnessed create (docs/RECOVERY.md): a device brings back `uuid` with the keys it holds.
/// The commit's own outcome (`Err(Recovering)` while its number must come from a recovering
/// counter).
async fn witness(
    b: &Backend,
    account: AccountId,
    idem: &str,
    uuid: Uuid,
    key: &str,
    previous: &[&str],
) -> callsign_storage::Result<Reply> {
    let body = new_task(key.split('-').next().unwrap(), &format!("witnessed {key}"));
    let request = CreateRequest::new(
        body.clone(),
        Some(Witness {
            key: key.to_owned(),
            previous_keys: previous.iter().map(|k| k.to_string()).collect(),
        }),
    );
    let m = Mutation {
        idem: idem.to_owned(),
        uuid,
        parent: None,
        fp: fingerprint("witness", uuid, &request),
        request: request.to_json(),
    };
    run_create(b, account, m, &body).await.map(Outcome::reply)
}

async fn resolves(b: &Backend, account: AccountId, key: &str) -> Option<Uuid> {
    let k = callsign_core::TaskKey::parse(key).unwrap();
    b.alloc
        .uuid_for_key(account, k.prefix.as_str(), &k.scope(), k.number as i64)
        .await
        .unwrap()
        .ok()
}

/// Witnessed creates bind the numbers devices hold, also while the project recovers: the
/// counter moves past them (never back), earlier keys resolve, a number another task holds
/// stays with it (the clash is reported and the witness's task is numbered anew once recovery
/// ends), a task that has its key gains the witnessed one as an earlier key, and the device's
/// own create of a witnessed task later finds its key. Numbers no one brought back are reported
/// lost and never handed out.
pub async fn witnesses_bring_back_keys_and_never_double_a_number(b: Backend) {
    let a = account(&b, "SYN").await;
    ops_project(&b, a).await;
    let mut t = Vec::new();
    for i in 1..=3 {
        let u = Uuid::new_v4();
        let r = create(&b, a, &format!("c{i}"), u, &new_task("SYN", "t"))
            .await
            .reply();
        assert_eq!(key_of(&r), format!("SYN-{i}"));
        t.push(u);
    }
    b.alloc
        .start_recovery(Some(a), RecoveryReason::Restore, now_ms())
        .await
        .unwrap();

    // A task the backup lost, moved from OPS-2 to SYN-5 before it.
    let w = Uuid::new_v4();
    let r = witness(&b, a, "w1", w, "SYN-5", &["OPS-2"]).await.unwrap();
    let task = task_of(&r);
    assert_eq!((r.status, task.key.as_deref()), (201, Some("SYN-5")));
    assert_eq!(task.previous_keys, ["OPS-2"]);
    assert_eq!(resolves(&b, a, "ops-2").await, Some(w));
    let replay = witness(&b, a, "w1", w, "SYN-5", &["OPS-2"]).await.unwrap();
    assert!(replay.replayed);
    let again = witness(&b, a, "w1-other-device", w, "SYN-5", &[])
        .await
        .unwrap();
    assert_eq!((again.status, key_of(&again)), (200, "SYN-5".to_owned()));

    // A key said for a task that has another: it names that task too.
    let r = witness(&b, a, "w2", t[0], "SYN-4", &[]).await.unwrap();
    assert_eq!((r.status, key_of(&r)), (200, "SYN-1".to_owned()));
    assert_eq!(task_of(&r).previous_keys, ["SYN-4"]);
    assert_eq!(resolves(&b, a, "SYN-4").await, Some(t[0]));

    // A key another task holds stays with it; the claimant waits for the counter.
    let x = Uuid::new_v4();
    let out = witness(&b, a, "w3", x, "SYN-2", &[]).await;
    assert!(
        matches!(&out, Err(callsign_storage::Error::Recovering { .. })),
        "{out:?}"
    );
    assert_eq!(resolves(&b, a, "SYN-2").await, Some(t[1]));
    let y = Uuid::new_v4();
    let r = witness(&b, a, "w4", y, "SYN-9", &[]).await.unwrap();
    assert_eq!(key_of(&r), "SYN-9");

    // The device that made `w` retries its own create (another body): it finds the key.
    let r = create(&b, a, "w-own-create", w, &new_task("SYN", "the original"))
        .await
        .reply();
    assert_eq!((r.status, key_of(&r)), (200, "SYN-5".to_owned()));

    // Recovery ends: the clashing task gets the next number, past every witnessed one.
    b.alloc.end_recovery(Some(a), None).await.unwrap();
    let r = witness(&b, a, "w3", x, "SYN-2", &[]).await.unwrap();
    assert_eq!((r.status, key_of(&r)), (201, "SYN-10".to_owned()));
    let r = create(&b, a, "after", Uuid::new_v4(), &new_task("OPS", "new"))
        .await
        .reply();
    assert_eq!(key_of(&r), "OPS-3", "OPS's counter moved past OPS-2");

    let report = b.alloc.recovery_report(Some(a)).await.unwrap();
    let lost: Vec<&str> = report.lost.iter().map(|l| l.key.as_str()).collect();
    assert_eq!(lost, ["OPS-1", "SYN-6", "SYN-7", "SYN-8"]);
    let clashes: Vec<(&str, Uuid, Uuid)> = report
        .clashes
        .iter()
        .map(|c| (c.key.as_str(), c.held_by, c.claimed_by))
        .collect();
    assert_eq!(clashes, [("SYN-2", t[1], x)]);
    let other = account(&b, "SYN").await;
    let none = b.alloc.recovery_report(Some(other)).await.unwrap();
    assert!(none.lost.is_empty() && none.clashes.is_empty(), "{none:?}");

    // A key from after a rename, with its name from before: one row, both names resolve.
    let syx = Prefix::parse("SYX").unwrap();
    b.alloc
        .update_project(
            a,
            &Prefix::parse("SYN").unwrap(),
            Some(&syx),
            None,
            now_ms(),
        )
        .await
        .unwrap();
    let z = Uuid::new_v4();
    let r = witness(&b, a, "w5", z, "SYX-12", &["SYN-12"])
        .await
        .unwrap();
    assert_eq!((r.status, key_of(&r)), (201, "SYX-12".to_owned()));
    assert_eq!(task_of(&r).previous_keys, ["SYN-12"]);
    assert_eq!(resolves(&b, a, "SYN-12").await, Some(z));
    assert_eq!(resolves(&b, a, "SYX-12").await, Some(z));
}

/// A move the server lost to a rollback (docs/RECOVERY.md): a device brings back the key it had
/// made, and its subtask's, as earlier keys; the moving device's retry waits while the project
/// recovers, then takes those keys back instead of new numbers (the key the team saw stays the
/// task's key, and no number is spent twice on one move). A later move is an ordinary one again.
pub async fn a_move_lost_to_a_rollback_takes_back_the_key_the_devices_kept(b: Backend) {
    let a = account(&b, "SYN").await;
    ops_project(&b, a).await;
    let r = create(&b, a, "o1", Uuid::new_v4(), &new_task("OPS", "o1"))
        .await
        .reply();
    assert_eq!(key_of(&r), "OPS-1");
    let (parent, child) = (Uuid::new_v4(), Uuid::new_v4());
    create(&b, a, "p", parent, &new_task("SYN", "parent"))
        .await
        .reply();
    let r = create_batch(
        &b,
        a,
        &[("c", child, new_task("SYN", "child"), Some(parent))],
    )
    .await;
    assert_eq!(key_of(&r[0]), "SYN-1.1");
    b.alloc
        .start_recovery(Some(a), RecoveryReason::Restore, now_ms())
        .await
        .unwrap();

    // Before the rollback the parent had moved to OPS-2 and its subtask become OPS-2.1; a
    // teammate's device saw it, and brings both keys back.
    let r = witness(&b, a, "w-parent", parent, "OPS-2", &["SYN-1"])
        .await
        .unwrap();
    assert_eq!((r.status, key_of(&r)), (200, "SYN-1".to_owned()));
    assert_eq!(task_of(&r).previous_keys, ["OPS-2"]);
    witness(&b, a, "w-child", child, "OPS-2.1", &["SYN-1.1"])
        .await
        .unwrap();

    // The device that moved it never had the answer: it sends the move again.
    let to_ops = TaskPatch {
        project: Some("OPS".into()),
        ..TaskPatch::default()
    };
    let out = try_update_one(&b, a, "move", parent, &to_ops).await;
    assert!(
        matches!(&out, Err(callsign_storage::Error::Recovering { .. })),
        "{out:?}"
    );
    b.alloc.end_recovery(Some(a), None).await.unwrap();
    let r = update_one(&b, a, "move", parent, &to_ops).await;
    let moved = task_of(&r);
    assert_eq!(
        (moved.key.as_deref(), moved.project.as_str()),
        (Some("OPS-2"), "OPS")
    );
    assert_eq!(moved.previous_keys, ["SYN-1"]);
    let meta = b.alloc.task_meta(a, vec![child]).await.unwrap();
    assert_eq!(meta[&child].key.as_ref().unwrap().key(), "OPS-2.1");
    assert_eq!(meta[&child].previous, ["SYN-1.1"]);
    assert_eq!(resolves(&b, a, "OPS-2").await, Some(parent));
    assert_eq!(resolves(&b, a, "SYN-1").await, Some(parent));
    // Taken back, the keys are to be written onto the tasks again.
    let stale = b.alloc.keys_not_in_store(i64::MAX, 100).await.unwrap();
    let stale: Vec<&str> = stale.iter().map(|(_, _, k)| k.as_str()).collect();
    assert!(
        stale.contains(&"OPS-2") && stale.contains(&"OPS-2.1"),
        "{stale:?}"
    );

    // The counters go on after the kept numbers, with nothing lost.
    let r = create(&b, a, "o3", Uuid::new_v4(), &new_task("OPS", "o3"))
        .await
        .reply();
    assert_eq!(key_of(&r), "OPS-3");
    let report = b.alloc.recovery_report(Some(a)).await.unwrap();
    assert!(
        report.lost.is_empty() && report.clashes.is_empty(),
        "{report:?}"
    );

    // Moves from now on are ordinary: each takes the next number.
    let back = TaskPatch {
        project: Some("SYN".into()),
        ..TaskPatch::default()
    };
    let r = update_one(&b, a, "back", parent, &back).await;
    assert_eq!(key_of(&r), "SYN-2");
    let r = update_one(&b, a, "again", parent, &to_ops).await;
    assert_eq!(key_of(&r), "OPS-4");
}

/// A rollback waits for the devices active before it: a token seen since `active_since` (or
/// made since, if never seen) and not back with its keys since the rollback is listed until it
/// witnesses; a device idle before that period, or a removed member's, is not waited for.
pub async fn devices_check_in_after_a_rollback(b: Backend) {
    let made = b
        .alloc
        .create_account(
            "team",
            &Prefix::parse("SYN").unwrap(),
            "Sync",
            &member("alice"),
        )
        .await
        .unwrap();
    let a = made.account_id;
    let AddMember::Added(bob) = b
        .alloc
        .add_member(a, &member("bob"), Role::Member, "laptop")
        .await
        .unwrap()
    else {
        panic!("bob not added");
    };
    let alice = hash_token(&made.token);
    let bob = hash_token(&bob.token);
    let start = now_ms();
    let names = |rows: Vec<callsign_storage::DeviceRow>| -> Vec<String> {
        rows.into_iter().map(|d| d.member).collect()
    };
    assert_eq!(
        names(b.alloc.unwitnessed(a, start - 60_000, start).await.unwrap()),
        ["alice", "bob"]
    );
    // Bob was last seen long before the period; alice brings back her keys.
    b.alloc.token_seen(&bob, 1_000).await.unwrap();
    b.alloc.token_witnessed(&alice, start + 5).await.unwrap();
    assert!(b
        .alloc
        .unwitnessed(a, start - 60_000, start)
        .await
        .unwrap()
        .is_empty());
    // A later rollback waits for alice again, and for bob once he is seen within the period.
    b.alloc.token_seen(&bob, start + 10).await.unwrap();
    let rows = b
        .alloc
        .unwitnessed(a, start - 60_000, start + 20)
        .await
        .unwrap();
    assert_eq!(names(rows.clone()), ["alice", "bob"]);
    assert_eq!(rows[1].last_seen_at, Some(start + 10));
    b.alloc
        .remove_member(a, &member("bob"), start + 30)
        .await
        .unwrap();
    assert_eq!(
        names(
            b.alloc
                .unwitnessed(a, start - 60_000, start + 20)
                .await
                .unwrap()
        ),
        ["alice"]
    );
}

/// An imported task (`origin`, `callsign import`) from `tracker` with its key there.
fn imported(prefix: &str, tracker: &str, key: &str, keep: bool) -> NewTask {
    NewTask {
        origin: Some(callsign_core::dto::Origin {
            tracker: tracker.to_owned(),
            key: Some(key.to_owned()),
        }),
        keep_number: keep,
        ..new_task(prefix, &format!("imported {key}"))
    }
}

async fn origin_holder(b: &Backend, account: AccountId, key: &str) -> Option<Uuid> {
    let key = callsign_core::dto::Origin::normal_key(key);
    let mut found = b
        .alloc
        .origin_holders(account, vec![key.clone()])
        .await
        .unwrap();
    found.remove(&key)
}

/// Imports: a kept number is bound as the task's key and the counter goes on after the
/// highest (the numbers it passed over are skipped, not lost, and stay unused); a tracker's key
/// keeps naming its task, any case; a prefix imported keys use is no new project's; a kept key
/// another task holds (a race the server's check lost) is never doubled: the task is numbered
/// from the counter and the clash reported.
pub async fn imports_keep_numbers_and_their_tracker_keys(b: Backend) {
    let a = account(&b, "SYN").await;
    let eng = Prefix::parse("ENG").unwrap();
    b.alloc
        .create_project(a, "Engineering", &eng)
        .await
        .unwrap()
        .unwrap();
    let e5 = Uuid::new_v4();
    let r = create(&b, a, "i5", e5, &imported("ENG", "jira", "ENG-5", true))
        .await
        .reply();
    assert_eq!((r.status, key_of(&r)), (201, "ENG-5".to_owned()));
    let origin = task_of(&r).origin.unwrap();
    assert_eq!(
        (origin.tracker.as_str(), origin.key.as_deref()),
        ("jira", Some("ENG-5"))
    );
    let e2 = Uuid::new_v4();
    let r = create(&b, a, "i2", e2, &imported("ENG", "jira", "ENG-2", true))
        .await
        .reply();
    assert_eq!(key_of(&r), "ENG-2");
    let replay = create(&b, a, "i2", e2, &imported("ENG", "jira", "ENG-2", true))
        .await
        .reply();
    assert!(replay.replayed);

    // The counter goes on after the highest kept number.
    let plain = Uuid::new_v4();
    let r = create(&b, a, "p1", plain, &new_task("ENG", "made here"))
        .await
        .reply();
    assert_eq!(key_of(&r), "ENG-6");
    let report = b.alloc.recovery_report(Some(a)).await.unwrap();
    assert!(
        report.lost.is_empty(),
        "skipped numbers are not lost: {report:?}"
    );
    // A skipped number may still come (a later item of the same import), and is then bound.
    let e3 = Uuid::new_v4();
    let r = create(&b, a, "i3", e3, &imported("ENG", "jira", "ENG-3", true))
        .await
        .reply();
    assert_eq!(key_of(&r), "ENG-3");
    assert_eq!(resolves(&b, a, "eng-3").await, Some(e3));
    assert_eq!(origin_holder(&b, a, "eng 5").await, Some(e5));
    assert_eq!(origin_holder(&b, a, "ENG-4").await, None);

    // A tracker's key in a prefix no project has: it names its task, and claims the prefix.
    let l7 = Uuid::new_v4();
    let r = create(&b, a, "l7", l7, &imported("SYN", "linear", "LIN-7", false))
        .await
        .reply();
    assert_eq!(key_of(&r), "SYN-1");
    assert_eq!(origin_holder(&b, a, "lin-7").await, Some(l7));
    let lin = Prefix::parse("LIN").unwrap();
    let made = b.alloc.create_project(a, "Linear", &lin).await.unwrap();
    assert!(made.is_none(), "LIN names imported keys");
    let renamed = b
        .alloc
        .update_project(
            a,
            &Prefix::parse("SYN").unwrap(),
            Some(&lin),
            None,
            now_ms(),
        )
        .await
        .unwrap();
    assert!(
        matches!(renamed, callsign_storage::Renamed::Imported),
        "{renamed:?}"
    );
    let gh = Uuid::new_v4();
    create(&b, a, "gh12", gh, &imported("SYN", "github", "#12", false))
        .await
        .reply();
    assert_eq!(origin_holder(&b, a, "#12").await, Some(gh));
    let other = account(&b, "SYN").await;
    assert_eq!(origin_holder(&b, other, "#12").await, None, "per account");

    // A kept key another task holds: never doubled.
    let late = Uuid::new_v4();
    let r = create(&b, a, "i6", late, &imported("ENG", "jira", "ENG-6", true))
        .await
        .reply();
    assert_eq!((r.status, key_of(&r)), (201, "ENG-7".to_owned()));
    assert_eq!(resolves(&b, a, "ENG-6").await, Some(plain));
    let report = b.alloc.recovery_report(Some(a)).await.unwrap();
    let clashes: Vec<(&str, Uuid, Uuid)> = report
        .clashes
        .iter()
        .map(|c| (c.key.as_str(), c.held_by, c.claimed_by))
        .collect();
    assert_eq!(clashes, [("ENG-6", plain, late)]);
    let lost: Vec<&str> = report.lost.iter().map(|l| l.key.as_str()).collect();
    assert!(
        lost.is_empty(),
        "ENG-1 and ENG-4 are skipped, not lost: {lost:?}"
    );
}
