//! Several server nodes on one PostgreSQL (issue 21): numbers stay exactly 1..N whichever node
//! a create reaches, and one idempotency key sent to two nodes at once gets one number and one
//! task. Skipped when no PostgreSQL can be started (outside CI only).
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::json;
use uuid::Uuid;

use crate::common::{create_account_in, Client, TestServer};

/// A fresh schema on the test PostgreSQL, or `None` (skip).
pub(crate) async fn database(label: &str) -> Option<String> {
    let pg = callsign_pgtest::shared()?;
    Some(pg.fresh_schema(label).await.unwrap())
}

fn nodes(url: &str, n: usize) -> Vec<TestServer> {
    (0..n)
        .map(|_| TestServer::serve(&["--database", url], &["--database-pool", "8"], &[]))
        .collect()
}

/// An account (prefix SYN) on a fresh schema, three nodes serving it and a client of each:
/// (database URL, nodes, clients), or `None` (skip).
async fn three_nodes(label: &str) -> Option<(String, Vec<TestServer>, Vec<Client>)> {
    let url = database(label).await?;
    let (_, token) = create_account_in(&["--database", &url], "SYN");
    let servers = nodes(&url, 3);
    let clients = servers
        .iter()
        .map(|s| Client::new(&s.url, &token))
        .collect();
    Some((url, servers, clients))
}

/// Every number in use in the account's first project, sorted, and how many tasks hold one.
pub(crate) async fn numbers(url: &str) -> (Vec<i64>, i64) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let rows = client
        .query("SELECT number FROM keys ORDER BY number", &[])
        .await
        .unwrap();
    let tasks: i64 = client
        .query_one("SELECT COUNT(DISTINCT task_uuid) FROM keys", &[])
        .await
        .unwrap()
        .get(0);
    (rows.iter().map(|r| r.get(0)).collect(), tasks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_give_5000_creates_from_64_clients_exactly_1_to_5000() {
    const CREATES: usize = 5_000;
    const CLIENTS: usize = 64;
    let Some((url, _servers, clients)) = three_nodes("nodes").await else {
        return;
    };
    let started = std::time::Instant::now();
    let mut workers = Vec::new();
    for w in 0..CLIENTS {
        let clients = clients.clone();
        workers.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for i in (w..CREATES).step_by(CLIENTS) {
                // Round robin over the nodes.
                let client = &clients[i % clients.len()];
                let uuid = Uuid::new_v4();
                let body = json!({"project": "SYN", "description": format!("task {i}")});
                let (status, _, task) = client.put(uuid, &format!("k{i}"), &body).await.unwrap();
                assert_eq!(status, 201, "{task}");
                got.push((task["number"].as_i64().unwrap(), uuid));
            }
            got
        }));
    }
    let mut by_number = BTreeMap::new();
    for w in workers {
        for (n, uuid) in w.await.unwrap() {
            assert!(
                by_number.insert(n, uuid).is_none(),
                "number {n} given twice"
            );
        }
    }
    let took = started.elapsed();
    println!(
        "{CREATES} creates, {CLIENTS} clients, 3 nodes: {took:?} ({:.0}/s)",
        CREATES as f64 / took.as_secs_f64()
    );
    let expected: Vec<i64> = (1..=CREATES as i64).collect();
    assert_eq!(by_number.keys().copied().collect::<Vec<_>>(), expected);
    let uuids: BTreeSet<Uuid> = by_number.values().copied().collect();
    assert_eq!(uuids.len(), CREATES, "one key per task");
    assert_eq!(numbers(&url).await, (expected, CREATES as i64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_key_sent_to_two_nodes_at_once_gets_one_number_and_one_task() {
    const ROUNDS: usize = 30;
    let Some(url) = database("samekey").await else {
        return;
    };
    let (_, token) = create_account_in(&["--database", &url], "SYN");
    let servers = nodes(&url, 2);
    let (a, b) = (
        Client::new(&servers[0].url, &token),
        Client::new(&servers[1].url, &token),
    );
    let mut in_progress = 0;
    for round in 0..ROUNDS {
        let uuid = Uuid::new_v4();
        let idem = format!("same-{round}");
        let body = json!({"project": "SYN", "description": format!("round {round}")});
        let (ra, rb) = tokio::join!(a.put(uuid, &idem, &body), b.put(uuid, &idem, &body));
        let mut keys = BTreeSet::new();
        for (status, _, task) in [ra.unwrap(), rb.unwrap()] {
            match status {
                201 => {
                    keys.insert(task["key"].as_str().unwrap().to_owned());
                }
                409 => {
                    assert_eq!(task["code"], "request_in_progress", "{task}");
                    in_progress += 1;
                }
                other => panic!("unexpected {other}: {task}"),
            }
        }
        // Whoever was turned away retries and gets the same answer.
        for client in [&a, &b] {
            let (status, _, task) = loop {
                let r = client.put(uuid, &idem, &body).await.unwrap();
                if r.0 != 409 {
                    break r;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            };
            assert_eq!(status, 201, "{task}");
            keys.insert(task["key"].as_str().unwrap().to_owned());
        }
        assert_eq!(keys.len(), 1, "one key for the task: {keys:?}");
    }
    println!("{in_progress} of {ROUNDS} races answered 409 request_in_progress");
    let expected: Vec<i64> = (1..=ROUNDS as i64).collect();
    assert_eq!(numbers(&url).await, (expected, ROUNDS as i64));
}

/// The change feed never lets a cursor pass an entry that commits later: a reader tailing
/// the feed (following its cursor, round robin over the nodes, as tightly as it can) while
/// three nodes commit creates concurrently ends up with every task. A feed numbered by a
/// serial column would fail this: entries commit out of number order, and a cursor that
/// moved past a number before its transaction committed never returns to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reader_tailing_the_feed_misses_no_task_while_three_nodes_write() {
    const CREATES: usize = 1_500;
    const CLIENTS: usize = 24;
    let Some((_, _servers, clients)) = three_nodes("tail").await else {
        return;
    };
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (clients, done) = (clients.clone(), done.clone());
        tokio::spawn(async move {
            let mut seen = BTreeSet::new();
            let mut cursor: Option<String> = None;
            let (mut pulls, mut last_round) = (0usize, false);
            loop {
                // Read `done` before the pull: a pull that starts after every create was
                // answered, and reaches the end of the feed, is the last one needed.
                let finished = done.load(Ordering::SeqCst);
                let since = cursor
                    .as_deref()
                    .map_or(String::new(), |c| format!("&since={c}"));
                let (status, page) = clients[pulls % clients.len()]
                    .get(&format!("/v1/changes?limit=200{since}"))
                    .await
                    .unwrap();
                pulls += 1;
                assert_eq!(status, 200, "{page}");
                for t in page["changes"].as_array().unwrap() {
                    seen.insert(t["uuid"].as_str().unwrap().parse::<Uuid>().unwrap());
                }
                cursor = Some(page["cursor"].as_str().unwrap().to_owned());
                if !page["has_more"].as_bool().unwrap() {
                    if last_round {
                        break;
                    }
                    last_round = finished;
                }
            }
            (seen, pulls)
        })
    };
    let mut workers = Vec::new();
    for w in 0..CLIENTS {
        let clients = clients.clone();
        workers.push(tokio::spawn(async move {
            let mut made = Vec::new();
            for i in (w..CREATES).step_by(CLIENTS) {
                let uuid = Uuid::new_v4();
                let body = json!({"project": "SYN", "description": format!("task {i}")});
                let (status, _, task) = clients[i % clients.len()]
                    .put(uuid, &format!("k{i}"), &body)
                    .await
                    .unwrap();
                assert_eq!(status, 201, "{task}");
                made.push(uuid);
            }
            made
        }));
    }
    let mut created = BTreeSet::new();
    for w in workers {
        created.extend(w.await.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    let (seen, pulls) = reader.await.unwrap();
    println!("{pulls} pulls tailed {} of {CREATES} creates", seen.len());
    let missed: Vec<&Uuid> = created.difference(&seen).take(5).collect();
    assert!(
        missed.is_empty(),
        "the tailing reader never saw {} task(s), e.g. {missed:?}",
        created.len() - seen.intersection(&created).count()
    );
    assert_eq!(seen, created);
}
