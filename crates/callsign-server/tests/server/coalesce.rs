//! Coalesced single requests on PostgreSQL (`--coalesce-requests`, `protocol::coalesce`):
//! concurrent PUTs and PATCHes of one account on one node run as shared batches, and each
//! keeps its single-request answer. Skipped when no PostgreSQL can be started (outside CI).
use std::collections::BTreeSet;

use std::future::Future;

use serde_json::json;
use uuid::Uuid;

use crate::common::{create_account_in, metric_opt, Client, TestServer};
use crate::nodes::{database, numbers};

/// Runs every future at once (each a task of its own); their outputs, in order.
async fn join_all<T: Send + 'static>(
    futs: impl IntoIterator<Item = impl Future<Output = T> + Send + 'static>,
) -> Vec<T> {
    let handles: Vec<_> = futs.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

fn node(url: &str, extra: &[&str]) -> TestServer {
    let mut args = vec!["--database-pool", "8"];
    args.extend_from_slice(extra);
    TestServer::serve(&["--database", url], &args, &[])
}

/// `(count, sum)` of `callsign_coalesced_batch_size{op}` on the node's `/metrics` (the series
/// must be there).
async fn batches(client: &Client, op: &str) -> (u64, u64) {
    let mut out = [0; 2];
    for (v, name) in out.iter_mut().zip(["count", "sum"]) {
        let series = format!("callsign_coalesced_batch_size_{name}{{op=\"{op}\"}}");
        *v = metric_opt(&client.http, &client.url, &series)
            .await
            .unwrap_or_else(|| panic!("no {series} on /metrics")) as u64;
    }
    (out[0], out[1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_puts_on_one_node_share_batches_and_number_exactly_1_to_n() {
    const CLIENTS: usize = 64;
    const ROUNDS: usize = 4;
    let Some(url) = database("coalesce_puts").await else {
        return;
    };
    let (_, token) = create_account_in(&["--database", &url], "SYN");
    let server = node(&url, &[]);
    let client = Client::new(&server.url, &token);
    let workers = (0..CLIENTS).map(|w| {
        let client = client.clone();
        async move {
            let mut got = Vec::new();
            for r in 0..ROUNDS {
                let uuid = Uuid::new_v4();
                let body = json!({"project": "SYN", "description": format!("task {w}/{r}")});
                let (status, replayed, task) =
                    client.put(uuid, &format!("k{w}-{r}"), &body).await.unwrap();
                assert_eq!((status, replayed), (201, false), "{task}");
                assert_eq!(task["uuid"], uuid.to_string(), "its own answer");
                assert_eq!(task["description"], format!("task {w}/{r}"));
                got.push(task["number"].as_i64().unwrap());
            }
            got
        }
    });
    let mut got: Vec<i64> = join_all(workers).await.into_iter().flatten().collect();
    got.sort_unstable();
    let n = (CLIENTS * ROUNDS) as i64;
    let expected: Vec<i64> = (1..=n).collect();
    assert_eq!(got, expected, "each number once");
    assert_eq!(numbers(&url).await, (expected, n));
    let (count, sum) = batches(&client, "create").await;
    println!("{sum} creates in {count} coalesced batches");
    assert_eq!(sum, n as u64, "every create went through the coalescer");
    assert!(
        count < sum,
        "no batch had more than one create: {count} batches"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_key_sent_many_times_at_once_gets_one_number_and_one_task() {
    const COPIES: usize = 32;
    const ROUNDS: usize = 5;
    let Some(url) = database("coalesce_samekey").await else {
        return;
    };
    let (_, token) = create_account_in(&["--database", &url], "SYN");
    let server = node(&url, &[]);
    let client = Client::new(&server.url, &token);
    let (mut replays, mut in_progress) = (0, 0);
    for round in 0..ROUNDS {
        let uuid = Uuid::new_v4();
        let idem = format!("same-{round}");
        let body = json!({"project": "SYN", "description": format!("round {round}")});
        let answers = join_all((0..COPIES).map(|_| {
            let (client, idem, body) = (client.clone(), idem.clone(), body.clone());
            async move { client.put(uuid, &idem, &body).await }
        }))
        .await;
        let (mut fresh, mut keys) = (0, BTreeSet::new());
        for a in answers {
            let (status, replayed, task) = a.unwrap();
            match (status, replayed) {
                (201, false) => fresh += 1,
                (201, true) => replays += 1,
                (409, _) => {
                    assert_eq!(task["code"], "request_in_progress", "{task}");
                    in_progress += 1;
                    continue;
                }
                other => panic!("unexpected {other:?}: {task}"),
            }
            keys.insert(task["key"].as_str().unwrap().to_owned());
        }
        assert_eq!(
            fresh, 1,
            "one answer numbered the task, the others replayed it"
        );
        assert_eq!(
            keys,
            BTreeSet::from([format!("SYN-{}", round + 1)]),
            "one key"
        );
    }
    println!("{replays} replays, {in_progress} request_in_progress");
    let expected: Vec<i64> = (1..=ROUNDS as i64).collect();
    assert_eq!(numbers(&url).await, (expected, ROUNDS as i64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_patches_share_batches_and_each_gets_its_own_task() {
    const TASKS: usize = 48;
    let Some(url) = database("coalesce_patches").await else {
        return;
    };
    let (_, token) = create_account_in(&["--database", &url], "SYN");
    let server = node(&url, &[]);
    let client = Client::new(&server.url, &token);
    let made = join_all((0..TASKS).map(|i| {
        let client = client.clone();
        async move {
            let uuid = Uuid::new_v4();
            let body = json!({"project": "SYN", "description": format!("task {i}")});
            let (status, _, task) = client.put(uuid, &format!("c{i}"), &body).await.unwrap();
            assert_eq!(status, 201, "{task}");
            task["key"].as_str().unwrap().to_owned()
        }
    }))
    .await;
    let patched = join_all(made.iter().cloned().enumerate().map(|(i, key)| {
        let client = client.clone();
        async move {
            let res = client
                .http
                .patch(format!("{}/v1/tasks/{key}", client.url))
                .bearer_auth(&client.token)
                .header("idempotency-key", format!("p{i}"))
                .json(&json!({"description": format!("patched {i}")}))
                .send()
                .await
                .unwrap();
            let status = res.status().as_u16();
            (status, res.json::<serde_json::Value>().await.unwrap())
        }
    }))
    .await;
    for (i, (status, task)) in patched.into_iter().enumerate() {
        assert_eq!(status, 200, "{task}");
        assert_eq!(task["key"], made[i], "its own task");
        assert_eq!(task["description"], format!("patched {i}"));
    }
    for (i, key) in made.iter().enumerate() {
        let (status, task) = client.get(&format!("/v1/tasks/{key}")).await.unwrap();
        assert_eq!(
            (status, &task["description"]),
            (200, &json!(format!("patched {i}")))
        );
    }
    let (count, sum) = batches(&client, "update").await;
    println!("{sum} updates in {count} coalesced batches");
    assert_eq!(sum, TASKS as u64);
    assert!(count < sum, "no batch had more than one update");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn coalesce_requests_false_runs_each_request_alone() {
    let Some(url) = database("coalesce_off").await else {
        return;
    };
    let (_, token) = create_account_in(&["--database", &url], "SYN");
    let server = node(&url, &["--coalesce-requests", "false"]);
    let client = Client::new(&server.url, &token);
    let answers = join_all((0..16).map(|i| {
        let client = client.clone();
        async move {
            let body = json!({"project": "SYN", "description": format!("task {i}")});
            client.put(Uuid::new_v4(), &format!("k{i}"), &body).await
        }
    }))
    .await;
    for a in answers {
        assert_eq!(a.unwrap().0, 201);
    }
    assert_eq!(numbers(&url).await, ((1..=16).collect(), 16));
    assert_eq!(
        batches(&client, "create").await,
        (0, 0),
        "no coalesced batch"
    );
}

/// A refused request in a burst fails alone, as it would without coalescing, and the rest of
/// the burst is numbered 1..N. The request carries U+0000, which PostgreSQL's `jsonb` cannot
/// store: before the field rules refused it (422 `invalid_body`, on every backend) it reached
/// the database, failed its whole batch, and answered 503 on every retry. (A batch that fails
/// in the database is run again one request at a time: the coalescer's unit tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_request_in_a_burst_fails_only_itself() {
    const GOOD: usize = 16;
    const ROUNDS: usize = 4;
    let Some(url) = database("coalesce_poison").await else {
        return;
    };
    let (_, token) = create_account_in(&["--database", &url], "SYN");
    let server = node(&url, &[]);
    let client = Client::new(&server.url, &token);
    let poison = json!({"project": "SYN", "description": "nul \u{0} inside"});
    let (alone, _, problem) = client.put(Uuid::new_v4(), "poison", &poison).await.unwrap();
    println!("alone, the refused request answers {alone}: {problem}");
    assert_eq!(alone, 422, "{problem}");
    assert_eq!(problem["code"], "invalid_body", "{problem}");
    for round in 0..ROUNDS {
        let mut reqs: Vec<(String, serde_json::Value)> = (0..GOOD)
            .map(|i| {
                let body = json!({"project": "SYN", "description": format!("task {round}/{i}")});
                (format!("k{round}-{i}"), body)
            })
            .collect();
        reqs.insert(GOOD / 2, (format!("poison-{round}"), poison.clone()));
        let answers = join_all(reqs.into_iter().map(|(idem, body)| {
            let client = client.clone();
            async move {
                let (status, _, task) = client.put(Uuid::new_v4(), &idem, &body).await.unwrap();
                (idem, status, task)
            }
        }))
        .await;
        for (idem, status, task) in answers {
            if idem.starts_with("poison") {
                assert_eq!(status, alone, "{task}");
            } else {
                assert_eq!(status, 201, "{idem}: {task}");
            }
        }
    }
    let n = (GOOD * ROUNDS) as i64;
    assert_eq!(numbers(&url).await, ((1..=n).collect(), n));
    let (count, sum) = batches(&client, "create").await;
    assert!(count < sum, "no batch had more than one create");
}
