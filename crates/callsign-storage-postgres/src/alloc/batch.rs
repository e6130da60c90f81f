//! Phase 1 and phase 2's commit for a whole batch in a fixed number of statements, whatever
//! its size: each step reads or writes every mutation of the batch at once (`= ANY($n)`,
//! `UNNEST`), and statements that do not wait for each other's answers are sent together
//! (tokio-postgres pipelines them on the connection; they still run in the order sent).
//!
//! Rows are locked and inserted in one order (idempotency key, UUID), so two batches that
//! overlap wait for each other instead of deadlocking. Phase 2 locks the account row first,
//! as before: it numbers the feed and orders every other lock of the commit. Numbers: each
//! project's counter row is bumped once by the count of tasks it numbers (`last = last + n`),
//! and those tasks take `last - n + 1 ..= last` in batch order.
//!
//! A witnessed create (docs/RECOVERY.md, rare) binds the keys it brings one by one
//! (`witness.rs`) while the batch is planned, before any counter is bumped: a counter a bound
//! number raised is bumped past it. A task a witness keys is numbered by no counter, even if an
//! earlier item of the batch planned it (SQLite, one item after another, numbers it first and
//! adds the witness's keys as earlier ones).
//!
//! An import that keeps its number (issue 42, `imports.rs`) binds it while the batch is planned
//! too, but in memory: the kept keys of the whole batch are read in one statement, decided in
//! batch order, and written together before any counter is bumped (and before a witness binds,
//! so each sees the other's). A kept key another task holds is a clash, recorded only if its
//! item commits; the task is then numbered from the counter. Each import's origin key is
//! recorded with the commit's rows.
use std::collections::{BTreeMap, HashMap, HashSet};

use callsign_core::Prefix;
use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};
use uuid::Uuid;

use super::imports::{self, Kept};
use super::witness::{Binder, WITNESSED};
use super::{current_key, in_progress, moves, note_retry, recovery, Decided, PgAlloc};
use crate::error::{DbError, Result};
use callsign_storage::protocol::move_target;
use callsign_storage::rows::child_scope;
use callsign_storage::{AccountId, CreateRequest, Imported, KeyRow, Witness};
use callsign_storage::{Commit, Mutation, Op, Refusal, Render, Reply, Reserved, Settled};

/// The columns [`PgAlloc::existing_slot`] reads, by position; phase 2 reads the request too,
/// only where it matters: an update's (a move), a witnessed create's
/// ([`callsign_storage::protocol::WITNESSED_PREFIX`]), an import's (a request with the field
/// `"origin"`, as [`callsign_storage::origin_in`] finds it).
pub(super) const SLOT_ROW: &str =
    "SELECT id, idem_key, fingerprint, state, response_status, response_body, created_at,
            task_uuid,
            CASE WHEN op = 'update' OR starts_with(request, '{\"task\":')
                      OR strpos(request, '\"origin\"') > 0
                 THEN request END
     FROM slots WHERE account_id = $1 AND idem_key = ANY($2) ORDER BY idem_key FOR UPDATE";

/// What [`Rows::write`] runs: the keys, the slots, the feed entries, the feed counter, the
/// origins of imports, the kept keys' clashes.
const ROWS: [&str; 6] = [
    "INSERT INTO keys (account_id, project_id, scope, number, task_uuid, assigned_at, epoch)
     SELECT $1, t.p, t.s, t.n, t.u, $5, pr.epoch
     FROM UNNEST($2::bigint[], $3::bigint[], $4::uuid[], $6::text[]) AS t(p, n, u, s)
     JOIN projects pr ON pr.id = t.p",
    "UPDATE slots s SET state = 'committed', number = t.n, response_status = t.st,
                        response_body = t.b, settled_at = $5,
                        claimed_by = NULL, claimed_until = NULL
     FROM UNNEST($1::bigint[], $2::bigint[], $3::int4[], $4::text[]) AS t(id, n, st, b)
     WHERE s.id = t.id",
    "INSERT INTO changes (account_id, task_uuid, seq, at)
     SELECT $1, u, s, $4 FROM UNNEST($2::uuid[], $3::bigint[]) AS t(u, s)
     ON CONFLICT (account_id, task_uuid) DO UPDATE SET seq = EXCLUDED.seq, at = EXCLUDED.at",
    "UPDATE accounts SET feed_last = $2 WHERE id = $1",
    imports::RECORD,
    imports::CLASHES,
];

/// The current keys of tasks `$2`, read by [`key_rows`].
const CURRENT_KEYS: &str = "SELECT k.task_uuid, k.project_id, p.prefix, k.number, k.scope
     FROM keys k JOIN projects p ON p.id = k.project_id
     WHERE k.account_id = $1 AND k.task_uuid = ANY($2) AND k.current";

fn key_rows(rows: &[Row]) -> HashMap<Uuid, KeyRow> {
    rows.iter()
        .map(|r| {
            let row = KeyRow {
                project_id: r.get(1),
                prefix: r.get(2),
                number: r.get(3),
                scope: r.get(4),
            };
            (r.get(0), row)
        })
        .collect()
}

/// The reservations of tasks `$2`, each with its parent's current key (read by
/// [`reservations`]).
const RESERVATIONS: &str = "SELECT t.uuid, t.project_id, t.parent_uuid, pk.scope, pk.number,
            pk.project_id
     FROM tasks t
     LEFT JOIN keys pk ON pk.account_id = t.account_id AND pk.task_uuid = t.parent_uuid
                      AND pk.current
     WHERE t.account_id = $1 AND t.uuid = ANY($2)";

/// A task's reservation as phase 2 needs it.
struct Reservation {
    /// Its project; a subtask's is its parent's (where the parent is now, if it moved).
    project: i64,
    /// The project phase 1 reserved it in (a subtask's parent may have moved since).
    reserved_in: i64,
    parent: Option<Uuid>,
    /// The counter scope it numbers in: `""` for a task, its parent's key path for a
    /// subtask; `None` while the parent has no key.
    scope: Option<String>,
}

fn reservations(rows: &[Row]) -> HashMap<Uuid, Reservation> {
    rows.iter()
        .map(|r| {
            let parent: Option<Uuid> = r.get(2);
            let parent_key: Option<(String, i64)> =
                r.get::<_, Option<String>>(3).map(|s| (s, r.get(4)));
            let scope = match (parent, parent_key) {
                (None, _) => Some(String::new()),
                (Some(_), Some((scope, number))) => Some(child_scope(&scope, number)),
                (Some(_), None) => None,
            };
            let at = Reservation {
                project: r.get::<_, Option<i64>>(5).unwrap_or(r.get(1)),
                reserved_in: r.get(1),
                parent,
                scope,
            };
            (r.get(0), at)
        })
        .collect()
}

/// Prepares `sqls` (a round trip each only the first time a connection sees one), so that
/// statements sent together afterwards run in the order they are sent.
pub(super) async fn prepare<const N: usize>(
    tx: &Transaction<'_>,
    sqls: [&str; N],
) -> Result<[Statement; N]> {
    let mut out = Vec::with_capacity(N);
    for sql in sqls {
        out.push(tx.prepare_cached(sql).await?);
    }
    out.try_into()
        .map_err(|_| failed("prepared a different number of statements"))
}

/// `sql`, prepared once per connection (a fresh parse and plan costs a round trip each time).
async fn stmt(tx: &Transaction<'_>, sql: &str) -> Result<Statement> {
    Ok(tx.prepare_cached(sql).await?)
}

fn failed(why: &str) -> DbError {
    DbError::CommitFailed(why.into())
}

impl PgAlloc {
    /// Phase 1 for `items` (distinct keys) inside `tx`: one decision per item, in order.
    pub(super) async fn phase1_batch(
        &self,
        tx: &Transaction<'_>,
        account: AccountId,
        op: Op,
        items: &[Mutation],
        now: i64,
    ) -> Result<Vec<Decided>> {
        let keys: Vec<&str> = items.iter().map(|m| m.idem.as_str()).collect();
        let existing: HashMap<String, Row> = tx
            .query(&stmt(tx, SLOT_ROW).await?, &[&account, &keys])
            .await?
            .into_iter()
            .map(|r| (r.get::<_, String>(1), r))
            .collect();
        let mut decided: Vec<Option<Decided>> = Vec::with_capacity(items.len());
        let mut fresh = Vec::new();
        for (i, it) in items.iter().enumerate() {
            let d = match existing.get(&it.idem) {
                Some(row) => self.existing_slot(tx, row, it, op, now).await?,
                None => None,
            };
            if d.is_none() {
                fresh.push(i);
            }
            decided.push(d);
        }
        if !fresh.is_empty() {
            let keys: Vec<&str> = fresh.iter().map(|&i| items[i].idem.as_str()).collect();
            let purged = tx
                .query(
                    &stmt(
                        tx,
                        "DELETE FROM purged_slots WHERE account_id = $1 AND idem_key = ANY($2)
                     RETURNING created_at",
                    )
                    .await?,
                    &[&account, &keys],
                )
                .await?;
            for r in purged {
                note_retry(tx, r.get(0), now, true).await?;
            }
            let projects = match op {
                Op::Create => reserve(tx, account, items, &mut fresh, &mut decided, now).await?,
                Op::Update => updatable(tx, account, items, &mut fresh, &mut decided).await?,
            };
            self.insert_slots(tx, account, op, items, &fresh, &projects, &mut decided, now)
                .await?;
        }
        decided
            .into_iter()
            .map(|d| d.ok_or_else(|| failed("phase 1 left a mutation undecided")))
            .collect()
    }

    /// Inserts a pending slot under this node's lease for each of `fresh`; a slot another
    /// node inserted meanwhile (its transaction committed first) is `409 request_in_progress`.
    #[allow(clippy::too_many_arguments)]
    async fn insert_slots(
        &self,
        tx: &Transaction<'_>,
        account: AccountId,
        op: Op,
        items: &[Mutation],
        fresh: &[usize],
        projects: &HashMap<Uuid, i64>,
        decided: &mut [Option<Decided>],
        now: i64,
    ) -> Result<()> {
        if fresh.is_empty() {
            return Ok(());
        }
        let pick = |f: fn(&Mutation) -> &str| -> Vec<&str> {
            fresh.iter().map(|&i| f(&items[i])).collect()
        };
        let keys = pick(|m| m.idem.as_str());
        let requests = pick(|m| m.request.as_str());
        let fps: Vec<&[u8]> = fresh.iter().map(|&i| items[i].fp.as_slice()).collect();
        let uuids: Vec<Uuid> = fresh.iter().map(|&i| items[i].uuid).collect();
        let rows = tx
            .query(
                &stmt(
                    tx,
                    "INSERT INTO slots (account_id, idem_key, fingerprint, op, task_uuid, request,
                                    state, created_at, last_seen_at, claimed_by, claimed_until)
                 SELECT $1, k, f, $6, u, r, 'pending', $7, $7, $8, $9
                 FROM UNNEST($2::text[], $3::bytea[], $4::uuid[], $5::text[]) AS t(k, f, u, r)
                 ORDER BY k
                 ON CONFLICT (account_id, idem_key) DO NOTHING
                 RETURNING idem_key, id",
                )
                .await?,
                &[
                    &account,
                    &keys,
                    &fps,
                    &uuids,
                    &requests,
                    &op.as_str(),
                    &now,
                    &&*self.node,
                    &self.lease_until(now),
                ],
            )
            .await?;
        let ids: HashMap<String, i64> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        for &i in fresh {
            let it = &items[i];
            decided[i] = Some(match ids.get(&it.idem) {
                Some(&slot) => Decided::Proceed(Reserved {
                    slot,
                    project: projects.get(&it.uuid).copied(),
                }),
                None => in_progress(),
            });
        }
        Ok(())
    }

    /// Phase 2's commit for `work` inside `tx`: one answer per item, in order.
    pub(super) async fn commit_batch(
        &self,
        tx: &Transaction<'_>,
        account: AccountId,
        op: Op,
        work: &[Commit],
        now: i64,
        render: &Render,
    ) -> Result<Vec<Result<Reply>>> {
        let idems: Vec<&str> = work.iter().map(|w| w.idem.as_str()).collect();
        let uuids: Vec<Uuid> = work.iter().map(|w| w.snapshot.uuid).collect();
        let [lock, slots, keys, reserved, previous] = prepare(
            tx,
            [
                "SELECT feed_last FROM accounts WHERE id = $1 FOR UPDATE",
                SLOT_ROW,
                CURRENT_KEYS,
                RESERVATIONS,
                moves::PREVIOUS_KEYS,
            ],
        )
        .await?;
        // The account row first (sent first, so locked first), then the rest in one go. A new
        // task has no earlier keys: only updates read them here (creates that have some, below).
        let (lock, slots, keys, reserved, previous) = tokio::try_join!(
            async { tx.query_one(&lock, &[&account]).await },
            async { tx.query(&slots, &[&account, &idems]).await },
            async { tx.query(&keys, &[&account, &uuids]).await },
            async { tx.query(&reserved, &[&account, &uuids]).await },
            async {
                match op {
                    Op::Update => tx.query(&previous, &[&account, &uuids]).await,
                    Op::Create => Ok(Vec::new()),
                }
            },
        )?;
        let mut previous = moves::previous_rows(&previous);
        let first: i64 = lock.get(0);
        let slots: HashMap<String, Row> = slots.into_iter().map(|r| (r.get(1), r)).collect();
        let mut current = key_rows(&keys);
        let mut reserved = reservations(&reserved);
        let fetched: HashSet<Uuid> = uuids.iter().copied().collect();

        // What each item needs: an answer stored already, or a commit (with a number?).
        let mut plan: Vec<Step> = Vec::with_capacity(work.len());
        let mut numbering = Numbering::default();
        let mut parent_of: HashMap<Uuid, Uuid> = HashMap::new();
        // Updates that move their task: the project each moves to.
        let mut moving: HashMap<String, String> = HashMap::new();
        let mut binder = Binder::new(tx, account, now);
        let mut recovering = Recovering::new(tx, account);
        // Each pending create's origin, if it is an import; the kept keys are read together.
        let imports: Vec<Option<Imported>> = work
            .iter()
            .map(|w| {
                let row = slots.get(&w.idem)?;
                let pending = op == Op::Create && row.get::<_, &str>(3) == "pending";
                callsign_storage::origin_in(row.get::<_, Option<&str>>(8).filter(|_| pending)?)
            })
            .collect();
        let keeps = imports.iter().flatten().filter_map(|i| i.keep.as_ref());
        let mut kept = Kept::new(tx, account, now, keeps);
        for (w, imported) in work.iter().zip(imports) {
            let Some(row) = slots.get(&w.idem) else {
                plan.push(Step::Done(Err(failed("slot vanished"))));
                continue;
            };
            let (slot, state, uuid): (i64, String, Uuid) = (row.get(0), row.get(3), row.get(7));
            if state != "pending" {
                plan.push(Step::Done(stored(row)));
                continue;
            }
            if !fetched.contains(&uuid) {
                // The slot names another task than its snapshot: read it one by one.
                if let Some(k) = current_key(tx, account, uuid).await? {
                    current.insert(uuid, k);
                }
                let st = stmt(tx, RESERVATIONS).await?;
                let one = vec![uuid];
                reserved.extend(reservations(&tx.query(&st, &[&account, &one]).await?));
            }
            let at = reserved.get(&uuid);
            if let Some(p) = at.and_then(|r| r.parent) {
                parent_of.insert(uuid, p);
            }
            let request = row.get::<_, Option<String>>(8);
            let witness = match op {
                Op::Create => request.as_deref().and_then(callsign_storage::witness_in),
                Op::Update => None,
            };
            let mut bound = None;
            if let Some(witness) = &witness {
                // The witness sees the keys kept so far; the keys kept after it see its own.
                kept.flush().await?;
                let target = counter_target(at, w.at.project);
                let keys = (&mut current, &mut numbering);
                let planned =
                    plan_witness(&mut binder, &mut recovering, keys, uuid, witness, target).await?;
                kept.forget();
                match planned {
                    Witnessed::Bound(k) => bound = Some(k),
                    Witnessed::Keyed => {}
                    Witnessed::Failed(e) => {
                        plan.push(Step::Done(Err(e)));
                        continue;
                    }
                }
            } else if op == Op::Create && !current.contains_key(&uuid) && !numbering.contains(uuid)
            {
                // An import that keeps its number binds it (else, in a race, the counter
                // numbers it). A task whose reservation vanished binds nothing: it fails.
                let keep = imported.as_ref().and_then(|i| i.keep.as_ref());
                let kept_key = match keep.filter(|_| at.is_some()) {
                    Some(key) => kept.bind(uuid, key).await?,
                    None => None,
                };
                match (kept_key, counter_target(at, w.at.project)) {
                    (Some(k), _) => {
                        current.insert(uuid, k.clone());
                        bound = Some(k);
                    }
                    (None, Ok(target)) => numbering.add(uuid, target),
                    (None, Err(e)) => {
                        plan.push(Step::Done(Err(e)));
                        continue;
                    }
                }
            }
            if op == Op::Update {
                let to = request.as_deref().and_then(move_target);
                let from = current.get(&uuid).map(|k| k.prefix.as_str());
                if let Some(to) = to.filter(|to| from.is_some_and(|f| f != to)) {
                    moving.insert(w.idem.clone(), to);
                }
            }
            plan.push(Step::Commit {
                slot,
                uuid,
                witnessed: witness.is_some(),
                bound,
                imported,
            });
        }
        // The kept keys are written before any counter is bumped: a counter one raised is
        // bumped past it.
        kept.flush().await?;

        // A recovering project numbers nothing (docs/RECOVERY.md): its items fail alone and
        // their slots stay pending. Read only when something here would take a number.
        let recovering = if numbering.wants.is_empty() && moving.is_empty() {
            HashMap::new()
        } else {
            recovering.take().await?
        };
        if !recovering.is_empty() {
            let mut withheld: HashMap<Uuid, String> = HashMap::new();
            numbering
                .wants
                .retain(|(project, _), tasks| match recovering.get(project) {
                    Some(prefix) => {
                        withheld.extend(tasks.iter().map(|u| (*u, prefix.clone())));
                        false
                    }
                    None => true,
                });
            for step in plan.iter_mut() {
                if let Step::Commit { uuid, .. } = &*step {
                    if let Some(prefix) = withheld.get(uuid) {
                        *step = Step::Done(Err(DbError::Recovering(prefix.clone())));
                    }
                }
            }
        }

        // Moves, one by one (rare): each renumbers its task and subtasks now, so the answers
        // below carry the new keys; an item's failure is its own.
        let mut moved: HashMap<String, Vec<Uuid>> = HashMap::new();
        for (w, step) in work.iter().zip(plan.iter_mut()) {
            let (Some(to), Step::Commit { uuid, .. }) = (moving.get(&w.idem), &*step) else {
                continue;
            };
            let uuid = *uuid;
            let Some(project) = moves::project_id(tx, account, to).await? else {
                *step = Step::Done(Err(failed("the project to move to vanished")));
                continue;
            };
            if current.get(&uuid).is_some_and(|k| k.project_id == project) {
                // An earlier prefix of the project the task is in: no move.
                continue;
            }
            if let Some(prefix) = recovering.get(&project) {
                *step = Step::Done(Err(DbError::Recovering(prefix.clone())));
                continue;
            }
            let subtasks = moves::move_tree(tx, account, uuid, project, now).await?;
            if let Some(k) = current_key(tx, account, uuid).await? {
                current.insert(uuid, k);
            }
            moved.insert(w.idem.clone(), subtasks);
        }
        if !moved.is_empty() {
            // The moves left old keys: read them again.
            previous = moves::previous_keys(tx, account, &uuids).await?;
        }
        if op == Op::Create {
            // Creates answered with a key the task has (200), and witnessed ones, list its
            // earlier keys (rare: read only for those).
            let keyed = answered_with_keys(&plan, &current);
            if !keyed.is_empty() {
                previous = moves::previous_keys(tx, account, &keyed).await?;
            }
        }

        let reprojected: Vec<(Uuid, i64)> = numbering.reprojected();
        if !reprojected.is_empty() {
            let (ids, projects): (Vec<Uuid>, Vec<i64>) = reprojected.into_iter().unzip();
            tx.execute(
                &stmt(
                    tx,
                    "UPDATE tasks t SET project_id = u.project
                     FROM UNNEST($2::uuid[], $3::bigint[]) AS u(uuid, project)
                     WHERE t.account_id = $1 AND t.uuid = u.uuid",
                )
                .await?,
                &[&account, &ids, &projects],
            )
            .await?;
        }

        // One bump per counter (a project's, or a parent's); its tasks take the numbers in
        // batch order.
        let mut fresh_keys: HashMap<Uuid, KeyRow> = HashMap::new();
        for ((project, scope), tasks) in &numbering.wants {
            let n = i64::try_from(tasks.len()).map_err(|_| failed("batch too large"))?;
            let r = tx
                .query_one(
                    &stmt(
                        tx,
                        "WITH bumped AS (
                         INSERT INTO counters (project_id, scope, last) VALUES ($1, $3, $2)
                         ON CONFLICT (project_id, scope)
                             DO UPDATE SET last = counters.last + $2
                         RETURNING last)
                     SELECT bumped.last, p.prefix FROM bumped, projects p WHERE p.id = $1",
                    )
                    .await?,
                    &[project, &n, scope],
                )
                .await?;
            let (last, prefix): (i64, String) = (r.get(0), r.get(1));
            for (i, uuid) in tasks.iter().enumerate() {
                let number = last - n + 1 + i as i64;
                fresh_keys.insert(
                    *uuid,
                    KeyRow {
                        project_id: *project,
                        prefix: prefix.clone(),
                        scope: scope.clone(),
                        number,
                    },
                );
            }
        }

        let mut out = Vec::with_capacity(work.len());
        let mut rows = Rows::default();
        let committed: HashSet<Uuid> = plan
            .iter()
            .filter_map(|step| match step {
                Step::Commit { uuid, .. } => Some(*uuid),
                Step::Done(_) => None,
            })
            .collect();
        rows.clashes = kept.clashes(|u| committed.contains(&u));
        let mut origins: HashSet<String> = HashSet::new();
        let mut seq = first;
        for (w, step) in work.iter().zip(plan) {
            let (slot, uuid, witnessed, bound, imported) = match step {
                Step::Done(r) => {
                    out.push(r);
                    continue;
                }
                Step::Commit {
                    slot,
                    uuid,
                    witnessed,
                    bound,
                    imported,
                } => (slot, uuid, witnessed, bound, imported),
            };
            // The first task of the batch to name an origin key records it (as one item
            // after another would).
            if let Some(i) = imported.filter(|i| origins.insert(i.key.clone())) {
                rows.origins.push((i.key, uuid, i.prefix));
            }
            // A number given here is given once: a later item of the same task keeps it. A
            // witness's key is bound already.
            let (status, number, key) = match (bound, fresh_keys.remove(&uuid)) {
                (Some(k), _) => (201, Some(k.number), Some(k)),
                (None, Some(k)) => {
                    rows.keys
                        .push((k.project_id, k.scope.clone(), k.number, uuid));
                    let number = k.number;
                    current.insert(uuid, k.clone());
                    (201, Some(number), Some(k))
                }
                (None, None) => (200, None, current.get(&uuid).cloned()),
            };
            let prefix = key.as_ref().map(|k| k.prefix.clone()).unwrap_or_default();
            // A new task has no earlier keys, unless a witness brought them back.
            let earlier = match (op, status, witnessed) {
                (Op::Create, 201, false) => Vec::new(),
                _ => previous.get(&uuid).cloned().unwrap_or_default(),
            };
            let body = render(Settled {
                snapshot: &w.snapshot,
                prefix: &prefix,
                key: key.as_ref(),
                parent: parent_of.get(&uuid).copied(),
                previous: &earlier,
            });
            for sub in moved.remove(&w.idem).unwrap_or_default() {
                seq += 1;
                rows.changes.insert(sub, seq);
            }
            seq += 1;
            rows.slots
                .push((slot, number, i32::from(status), body.clone()));
            rows.changes.insert(uuid, seq);
            out.push(Ok(Reply {
                status,
                body,
                replayed: false,
                change: Some(seq),
            }));
        }
        rows.write(tx, account, first, seq, now).await?;
        Ok(out)
    }
}

/// How phase 2 settles one item.
enum Step {
    /// Answered without a commit: a stored answer, or this item's own failure.
    Done(Result<Reply>),
    Commit {
        slot: i64,
        uuid: Uuid,
        /// A witnessed create (docs/RECOVERY.md).
        witnessed: bool,
        /// The key its witness bound as the task's current one, or the key an import kept.
        bound: Option<KeyRow>,
        /// An import's origin (issue 42), recorded when the item commits.
        imported: Option<Imported>,
    },
}

/// The answer a slot no longer pending stored (a reaper that failed it stored none).
fn stored(row: &Row) -> Result<Reply> {
    let status: Option<i32> = row.get(4);
    let body: Option<String> = row.get(5);
    match (status, body) {
        (Some(status), Some(body)) => Ok(Reply {
            status: u16::try_from(status).unwrap_or(200),
            body,
            replayed: true,
            change: None,
        }),
        _ => Err(failed("slot was failed by the reaper")),
    }
}

/// The counter a task takes its number from.
struct Target {
    project: i64,
    /// `""` for a task, its parent's key path for a subtask.
    scope: String,
    /// The project phase 1 reserved it in.
    reserved_in: i64,
}

/// Where a create with no key numbers: a task in the project phase 1 reserved (`reserved`,
/// if it passed one on), a subtask under its parent's current key, in its parent's project.
fn counter_target(at: Option<&Reservation>, reserved: Option<i64>) -> Result<Target> {
    let at = at.ok_or_else(|| failed("task reservation vanished"))?;
    let scope = at
        .scope
        .clone()
        .ok_or_else(|| failed("the parent has no key"))?;
    let project = match at.parent {
        Some(_) => at.project,
        None => reserved.unwrap_or(at.project),
    };
    Ok(Target {
        project,
        scope,
        reserved_in: at.reserved_in,
    })
}

/// The tasks a commit numbers from counters.
#[derive(Default)]
struct Numbering {
    /// Each counter's tasks, in batch order; they take its next numbers in that order.
    wants: BTreeMap<(i64, String), Vec<Uuid>>,
    /// The counter of each task planned.
    planned: HashMap<Uuid, Target>,
}

impl Numbering {
    fn add(&mut self, uuid: Uuid, target: Target) {
        let counter = (target.project, target.scope.clone());
        self.wants.entry(counter).or_default().push(uuid);
        self.planned.insert(uuid, target);
    }

    fn contains(&self, uuid: Uuid) -> bool {
        self.planned.contains_key(&uuid)
    }

    /// Takes `uuid` out again: a witness later in the batch bound its key.
    fn remove(&mut self, uuid: Uuid) {
        let Some(target) = self.planned.remove(&uuid) else {
            return;
        };
        let counter = (target.project, target.scope);
        if let Some(tasks) = self.wants.get_mut(&counter) {
            tasks.retain(|u| *u != uuid);
            if tasks.is_empty() {
                self.wants.remove(&counter);
            }
        }
    }

    /// The tasks numbered here that go to another project than phase 1 reserved them in (a
    /// subtask whose parent moved since goes where the parent is), by UUID: each one's project.
    fn reprojected(&self) -> Vec<(Uuid, i64)> {
        let mut out: Vec<(Uuid, i64)> = self
            .wants
            .values()
            .flatten()
            .filter_map(|u| {
                let t = self.planned.get(u)?;
                (t.project != t.reserved_in).then_some((*u, t.project))
            })
            .collect();
        out.sort_unstable();
        out
    }
}

/// The recovering projects of the account, read once, when first asked.
struct Recovering<'a, 't> {
    tx: &'a Transaction<'t>,
    account: AccountId,
    read: Option<HashMap<i64, String>>,
}

impl<'a, 't> Recovering<'a, 't> {
    fn new(tx: &'a Transaction<'t>, account: AccountId) -> Self {
        Recovering {
            tx,
            account,
            read: None,
        }
    }

    /// The prefix of `project` if it is recovering.
    async fn of(&mut self, project: i64) -> Result<Option<String>> {
        if self.read.is_none() {
            self.read = Some(recovery::recovering_in(self.tx, self.account).await?);
        }
        Ok(self.read.as_ref().and_then(|r| r.get(&project).cloned()))
    }

    /// Every recovering project: id → prefix.
    async fn take(self) -> Result<HashMap<i64, String>> {
        match self.read {
            Some(read) => Ok(read),
            None => recovery::recovering_in(self.tx, self.account).await,
        }
    }
}

/// How phase 2 planned a witnessed create.
enum Witnessed {
    /// The witness's key is the task's current one now (answered 201).
    Bound(KeyRow),
    /// The task has its key, or takes one from a counter.
    Keyed,
    /// The task cannot be numbered now: the item's own failure, and nothing it brought is
    /// bound.
    Failed(DbError),
}

/// Binds a witnessed create's keys (docs/RECOVERY.md), as SQLite's `commit_create` does: a
/// task that has its key gains the free witnessed ones as earlier keys; one with no key takes
/// the witness's key if no task holds it (and a counter earlier in the batch does not number
/// it); else it is numbered from `target`, and fails if it cannot be (also while `target`
/// recovers), leaving nothing bound, as SQLite rolls back a failed item.
async fn plan_witness(
    binder: &mut Binder<'_, '_>,
    recovering: &mut Recovering<'_, '_>,
    (current, numbering): (&mut HashMap<Uuid, KeyRow>, &mut Numbering),
    uuid: Uuid,
    witness: &Witness,
    target: Result<Target>,
) -> Result<Witnessed> {
    if let Some(k) = current.get(&uuid) {
        binder.bind_earlier(uuid, witness, k).await?;
        return Ok(Witnessed::Keyed);
    }
    binder.savepoint().await?;
    if let Some(k) = binder.bind_current(uuid, witness).await? {
        binder.release().await?;
        numbering.remove(uuid);
        current.insert(uuid, k.clone());
        return Ok(Witnessed::Bound(k));
    }
    if numbering.contains(uuid) {
        // An earlier item of the batch numbers the task; this one is answered with its key.
        binder.release().await?;
        return Ok(Witnessed::Keyed);
    }
    let target = match target {
        Ok(t) => match recovering.of(t.project).await? {
            Some(prefix) => Err(DbError::Recovering(prefix)),
            None => Ok(t),
        },
        Err(e) => Err(e),
    };
    match target {
        Ok(t) => {
            binder.release().await?;
            numbering.add(uuid, t);
            Ok(Witnessed::Keyed)
        }
        Err(e) => {
            binder.roll_back().await?;
            Ok(Witnessed::Failed(e))
        }
    }
}

/// The tasks of creates to be answered with a key the task has, or with a witness's keys (an
/// import's kept key is new: it has no earlier ones).
fn answered_with_keys(plan: &[Step], current: &HashMap<Uuid, KeyRow>) -> Vec<Uuid> {
    let keyed: HashSet<Uuid> = plan
        .iter()
        .filter_map(|step| match step {
            Step::Commit {
                uuid,
                witnessed,
                bound,
                ..
            } if *witnessed || (bound.is_none() && current.contains_key(uuid)) => Some(*uuid),
            _ => None,
        })
        .collect();
    keyed.into_iter().collect()
}

/// The rows one commit writes, written in one statement per table.
#[derive(Default)]
struct Rows {
    /// (project, scope, number, task)
    keys: Vec<(i64, String, i64, Uuid)>,
    /// (slot, number, status, body)
    slots: Vec<(i64, Option<i64>, i32, String)>,
    /// The last feed number of each task (one entry per task).
    changes: BTreeMap<Uuid, i64>,
    /// Imports' origins: (key, task, prefix), one per key.
    origins: Vec<(String, Uuid, Option<String>)>,
    /// Kept keys other tasks held: (key, held_by, claimed_by).
    clashes: Vec<(String, Uuid, Uuid)>,
}

impl Rows {
    async fn write(
        self,
        tx: &Transaction<'_>,
        account: AccountId,
        first: i64,
        last: i64,
        now: i64,
    ) -> Result<()> {
        let key_projects: Vec<i64> = self.keys.iter().map(|k| k.0).collect();
        let key_scopes: Vec<&str> = self.keys.iter().map(|k| k.1.as_str()).collect();
        let key_numbers: Vec<i64> = self.keys.iter().map(|k| k.2).collect();
        let key_uuids: Vec<Uuid> = self.keys.iter().map(|k| k.3).collect();
        let slot_ids: Vec<i64> = self.slots.iter().map(|s| s.0).collect();
        let slot_numbers: Vec<Option<i64>> = self.slots.iter().map(|s| s.1).collect();
        let slot_status: Vec<i32> = self.slots.iter().map(|s| s.2).collect();
        let slot_bodies: Vec<&str> = self.slots.iter().map(|s| s.3.as_str()).collect();
        let change_uuids: Vec<Uuid> = self.changes.keys().copied().collect();
        let change_seqs: Vec<i64> = self.changes.values().copied().collect();
        let origin_keys: Vec<&str> = self.origins.iter().map(|o| o.0.as_str()).collect();
        let origin_uuids: Vec<Uuid> = self.origins.iter().map(|o| o.1).collect();
        let origin_prefixes: Vec<Option<&str>> =
            self.origins.iter().map(|o| o.2.as_deref()).collect();
        let clash_keys: Vec<&str> = self.clashes.iter().map(|c| c.0.as_str()).collect();
        let clash_held: Vec<Uuid> = self.clashes.iter().map(|c| c.1).collect();
        let clash_claimed: Vec<Uuid> = self.clashes.iter().map(|c| c.2).collect();
        let [keys, slots, changes, feed, origins, clashes] = prepare(tx, ROWS).await?;
        tokio::try_join!(
            async {
                if key_uuids.is_empty() {
                    return Ok(0);
                }
                let p: [&(dyn ToSql + Sync); 6] = [
                    &account,
                    &key_projects,
                    &key_numbers,
                    &key_uuids,
                    &now,
                    &key_scopes,
                ];
                tx.execute(&keys, &p).await
            },
            async {
                if slot_ids.is_empty() {
                    return Ok(0);
                }
                let p: [&(dyn ToSql + Sync); 5] =
                    [&slot_ids, &slot_numbers, &slot_status, &slot_bodies, &now];
                tx.execute(&slots, &p).await
            },
            async {
                if change_uuids.is_empty() {
                    return Ok(0);
                }
                let p: [&(dyn ToSql + Sync); 4] = [&account, &change_uuids, &change_seqs, &now];
                tx.execute(&changes, &p).await
            },
            async {
                if last == first {
                    return Ok(0);
                }
                tx.execute(&feed, &[&account, &last]).await
            },
            async {
                if origin_keys.is_empty() {
                    return Ok(0);
                }
                let p: [&(dyn ToSql + Sync); 4] =
                    [&account, &origin_keys, &origin_uuids, &origin_prefixes];
                tx.execute(&origins, &p).await
            },
            async {
                if clash_keys.is_empty() {
                    return Ok(0);
                }
                let p: [&(dyn ToSql + Sync); 5] =
                    [&account, &now, &clash_keys, &clash_held, &clash_claimed];
                tx.execute(&clashes, &p).await
            },
        )?;
        Ok(())
    }
}

/// Creates among `fresh`: finds each one's project and reserves its UUID with the
/// request's fingerprint ([`WITNESSED`] for a witness); refusals (no such project, UUID taken
/// by another request, unless either is a witness's) are decided and leave `fresh`. Returns
/// the project of each UUID still going on.
async fn reserve(
    tx: &Transaction<'_>,
    account: AccountId,
    items: &[Mutation],
    fresh: &mut Vec<usize>,
    decided: &mut [Option<Decided>],
    now: i64,
) -> Result<HashMap<Uuid, i64>> {
    // Each item's project, and whether it is a witness (docs/RECOVERY.md).
    let mut wanted: HashMap<usize, (String, bool)> = HashMap::new();
    for &i in fresh.iter() {
        let request = CreateRequest::parse(&items[i].request)
            .map_err(|e| DbError::CommitFailed(e.to_string()))?;
        let witnessed = request.witness().is_some();
        wanted.insert(i, (request.into_task().project, witnessed));
    }
    let prefixes: Vec<String> = wanted
        .values()
        .filter_map(|(p, _)| Prefix::parse(p).ok())
        .map(|p| p.as_str().to_owned())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let ids: HashMap<String, i64> = tx
        .query(
            &stmt(
                tx,
                "SELECT prefix, project_id FROM prefixes WHERE account_id = $1
                 AND prefix = ANY($2)",
            )
            .await?,
            &[&account, &prefixes],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut rows: BTreeMap<Uuid, (i64, Vec<u8>, Option<Uuid>)> = BTreeMap::new();
    fresh.retain(|&i| {
        let (asked, witnessed) = &wanted[&i];
        let id = Prefix::parse(asked)
            .ok()
            .and_then(|p| ids.get(p.as_str()).copied());
        match id {
            Some(id) => {
                // A witness's reservation stands for no one request: any later create of the
                // task finds its key by it.
                let fp = if *witnessed {
                    WITNESSED
                } else {
                    &items[i].fp[..]
                };
                rows.entry(items[i].uuid)
                    .or_insert_with(|| (id, fp.to_vec(), items[i].parent));
                true
            }
            None => {
                decided[i] = Some(Decided::Refused(Refusal::NoProject(asked.clone())));
                false
            }
        }
    });
    let uuids: Vec<Uuid> = rows.keys().copied().collect();
    let projects: Vec<i64> = rows.values().map(|r| r.0).collect();
    let fps: Vec<&[u8]> = rows.values().map(|r| r.1.as_slice()).collect();
    let parents: Vec<Option<Uuid>> = rows.values().map(|r| r.2).collect();
    let [insert, read] = prepare(
        tx,
        [
            "INSERT INTO tasks (account_id, uuid, project_id, fingerprint, created_at, parent_uuid)
             SELECT $1, u, p, f, $5, pa
             FROM UNNEST($2::uuid[], $3::bigint[], $4::bytea[], $6::uuid[]) AS t(u, p, f, pa)
             ORDER BY u
             ON CONFLICT (account_id, uuid) DO NOTHING",
            "SELECT uuid, project_id, fingerprint FROM tasks
             WHERE account_id = $1 AND uuid = ANY($2)",
        ],
    )
    .await?;
    // A reservation made meanwhile by another request is read back, not replaced (the read
    // is sent behind the insert and runs after it).
    let (_, read) = tokio::try_join!(
        async {
            let p: [&(dyn ToSql + Sync); 6] = [&account, &uuids, &projects, &fps, &now, &parents];
            tx.execute(&insert, &p).await
        },
        async { tx.query(&read, &[&account, &uuids]).await },
    )?;
    let reserved: HashMap<Uuid, (i64, Vec<u8>)> = read
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect();
    let mut project_of = HashMap::new();
    let mut vanished = false;
    fresh.retain(|&i| {
        let it = &items[i];
        // A witness brings back a task whatever request made it.
        let witnessed = wanted[&i].1;
        match reserved.get(&it.uuid) {
            Some((p, fp)) if *fp == it.fp || witnessed || fp == WITNESSED => {
                project_of.insert(it.uuid, *p);
                true
            }
            Some(_) => {
                decided[i] = Some(Decided::Refused(Refusal::TaskExists(it.uuid)));
                false
            }
            None => {
                vanished = true;
                false
            }
        }
    });
    if vanished {
        return Err(failed("task reservation vanished"));
    }
    Ok(project_of)
}

/// Updates among `fresh`: a task with a current key goes on; one without is refused
/// (`409 task_not_committed` if reserved, else `404`) and leaves `fresh`.
async fn updatable(
    tx: &Transaction<'_>,
    account: AccountId,
    items: &[Mutation],
    fresh: &mut Vec<usize>,
    decided: &mut [Option<Decided>],
) -> Result<HashMap<Uuid, i64>> {
    let uuids: Vec<Uuid> = fresh.iter().map(|&i| items[i].uuid).collect();
    let [keyed, reserved] = prepare(
        tx,
        [
            "SELECT task_uuid FROM keys WHERE account_id = $1 AND task_uuid = ANY($2) AND current",
            "SELECT uuid FROM tasks WHERE account_id = $1 AND uuid = ANY($2)",
        ],
    )
    .await?;
    let (keyed, reserved) = tokio::try_join!(
        async { tx.query(&keyed, &[&account, &uuids]).await },
        async { tx.query(&reserved, &[&account, &uuids]).await },
    )?;
    let keyed: HashSet<Uuid> = keyed.iter().map(|r| r.get(0)).collect();
    let reserved: HashSet<Uuid> = reserved.iter().map(|r| r.get(0)).collect();
    fresh.retain(|&i| {
        let u = items[i].uuid;
        if keyed.contains(&u) {
            return true;
        }
        decided[i] = Some(Decided::Refused(Refusal::NotUpdatable {
            uuid: u,
            reserved: reserved.contains(&u),
        }));
        false
    });
    Ok(HashMap::new())
}
