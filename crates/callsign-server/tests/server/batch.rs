//! End-to-end: `POST /v1/sync` with 1000 mutations, 10 of them replays of earlier keys.
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::{create_account, numbers_in_db, Client, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_mutations_with_ten_replays() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let server = TestServer::start(dir.path(), &[], &[]);
    let client = Client::new(&server.url, &token);

    // Ten creates sent earlier, one request each.
    let mut earlier = Vec::new();
    for i in 0..10 {
        let u = Uuid::new_v4();
        let body = json!({"project": "SYN", "description": format!("early {i}")});
        let (status, _, task) = client.put(u, &format!("early-{i}"), &body).await.unwrap();
        assert_eq!(status, 201);
        earlier.push((u, body, task));
    }
    let mut mutations: Vec<Value> = (0..990)
        .map(|i| {
            json!({"idempotency_key": format!("batch-{i}"), "op": "create", "uuid": Uuid::new_v4(),
                   "fields": {"project": "syn", "description": format!("batch {i}")}})
        })
        .collect();
    for (i, (u, body, _)) in earlier.iter().enumerate() {
        mutations.insert(i * 97, json!({"idempotency_key": format!("early-{i}"), "op": "create", "uuid": u, "fields": body}));
    }
    assert_eq!(mutations.len(), 1000);
    let (status, res) = client
        .post("/v1/sync", &json!({"mutations": mutations}))
        .await
        .unwrap();
    assert_eq!(status, 200, "{res}");
    let results = res["results"].as_array().unwrap();
    assert_eq!(results.len(), 1000);
    let replays: Vec<&Value> = results.iter().filter(|r| r["replayed"] == true).collect();
    assert_eq!(replays.len(), 10);
    for (r, (_, _, task)) in replays.iter().zip(&earlier) {
        assert_eq!(r["task"], *task, "a replay answers with the stored task");
    }
    let mut fresh: Vec<i64> = results
        .iter()
        .filter(|r| r["replayed"] == false)
        .map(|r| {
            assert_eq!(r["status"], 201, "{r}");
            r["task"]["number"].as_i64().unwrap()
        })
        .collect();
    fresh.sort_unstable();
    assert_eq!(
        fresh,
        (11..=1000).collect::<Vec<i64>>(),
        "990 new numbers after the 10 earlier ones"
    );
    assert_eq!(
        numbers_in_db(dir.path()),
        (1..=1000).collect::<Vec<i64>>(),
        "nothing duplicated"
    );
    // Results keep request order.
    assert_eq!(results[97]["idempotency_key"], "early-1");
    // The first page of the feed holds 500 changes: the 10 earlier creates (other requests)
    // and 490 of this batch's, which the results carry already and are left out.
    let mut changed: Vec<&str> = res["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["description"].as_str().unwrap())
        .collect();
    changed.sort_unstable();
    let mut early: Vec<String> = (0..10).map(|i| format!("early {i}")).collect();
    early.sort_unstable();
    assert_eq!(
        changed, early,
        "first page of changes, less this batch's own"
    );
    let plain = client
        .http
        .get(format!("{}/v1/changes?limit=500", client.url))
        .bearer_auth(&client.token)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(
        res["cursor"], plain["cursor"],
        "the cursor passes the left-out changes, to the 500th change"
    );
    assert_eq!(res["has_more"], true);

    // One bad mutation fails alone; too many mutations is 413.
    let mixed = json!({"mutations": [
        {"idempotency_key": "ok-1", "op": "create", "uuid": Uuid::new_v4(), "fields": {"project": "SYN", "description": "fine"}},
        {"idempotency_key": "bad-1", "op": "create", "uuid": Uuid::new_v4(), "fields": {"project": "SYN", "description": ""}},
        {"idempotency_key": "upd-1", "op": "update", "uuid": earlier[0].0, "fields": {"status": "completed"}},
    ]});
    let (status, res) = client.post("/v1/sync", &mixed).await.unwrap();
    assert_eq!(status, 200);
    let codes: Vec<Value> = res["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].clone())
        .collect();
    assert_eq!(codes, vec![json!(201), json!(422), json!(200)]);
    assert_eq!(res["results"][1]["error"]["code"], "invalid_body");
    assert_eq!(res["results"][0]["task"]["number"], 1001);
    let too_many: Vec<Value> = (0..1001)
        .map(|i| json!({"idempotency_key": format!("x{i}"), "op": "create", "uuid": Uuid::new_v4(), "fields": {"project": "SYN", "description": "x"}}))
        .collect();
    let (status, res) = client
        .post("/v1/sync", &json!({"mutations": too_many}))
        .await
        .unwrap();
    assert_eq!(
        (status, res["code"].as_str().unwrap()),
        (413, "batch_too_large")
    );
}
