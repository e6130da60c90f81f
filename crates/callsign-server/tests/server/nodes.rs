//! Several server nodes on one PostgreSQL (issue 21): numbers stay exactly 1..N whichever node
//! a create reaches, and one idempotency key sent to two nodes at once gets one number and one
//! task. Skipped when no PostgreSQL can be started (outside CI only).
use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
use uuid::Uuid;

use crate::common::{create_account_in, Client, TestServer};

/// A fresh schema on the test PostgreSQL, or `None` (skip).
async fn database(label: &str) -> Option<String> {
    let pg = callsign_pgtest::shared()?;
    Some(pg.fresh_schema(label).await.unwrap())
}

fn nodes(url: &str, n: usize) -> Vec<TestServer> {
    (0..n)
        .map(|_| TestServer::serve(&["--database", url], &["--database-pool", "8"], &[]))
        .collect()
}

/// Every number in use in the account's first project, sorted, and how many tasks hold one.
async fn numbers(url: &str) -> (Vec<i64>, i64) {
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
    let Some(url) = database("nodes").await else {
        return;
    };
    let (_, token) = create_account_in(&["--database", &url], "SYN");
    let servers = nodes(&url, 3);
    let clients: Vec<Client> = servers
        .iter()
        .map(|s| Client::new(&s.url, &token))
        .collect();
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
