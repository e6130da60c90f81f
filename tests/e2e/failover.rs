//! The PostgreSQL failover proof (issue 41): real PostgreSQL, two clusters on loopback,
//! a primary with a streaming standby. The standby is stopped while creates continue through
//! two server nodes, the primary is killed, the standby promoted and the nodes restarted on
//! it, and nobody runs `recovery start`: the first device that saw newer history finds the
//! feed behind its cursor, the account recovers, and the devices bring back their keys. No key
//! names two tasks, every key a device holds names its task, and the number no device holds
//! any more (its laptop was lost) is reported and never handed out again.
//!
//! That number is reported because a later one is brought back: a CLI device holds every key
//! below the newest it has seen (it pulls the whole feed), so a number only a lost device held
//! is lost below the counter only when some device holds a later key without it. Here that is
//! a script filing tasks over the HTTP API. A number above every key brought back leaves no
//! trace on the promoted standby and is handed out again (docs/RECOVERY.md, "What recovery
//! cannot bring back"; an asynchronous standby loses it, docs/OPERATIONS.md).
//!
//! Needs PostgreSQL's programs; runs only in the `CALLSIGN_E2E_DATABASE=postgres` pass.
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Result};
use callsign_core::dto::{NewTask, WitnessRequest, WitnessedTask};
use callsign_pgtest::{Cluster, Options};
use serde_json::{json, Value};

use crate::cli::{keyed, Cli};
use crate::fixture::{server_tasks, TestServer, DATABASE_ENV};

/// `(uuid, key)`: a key a device holds and the task it must name.
type Held = Vec<(String, String)>;

#[test]
fn a_standby_promoted_behind_the_devices_loses_no_key_and_reuses_no_number() -> Result<()> {
    if std::env::var(DATABASE_ENV).as_deref() != Ok("postgres") {
        eprintln!("failover: skipped, it needs PostgreSQL ({DATABASE_ENV}=postgres)");
        return Ok(());
    }
    let began = Instant::now();
    let primary = match Cluster::start(Options::primary()) {
        Ok(c) => c,
        Err(callsign_pgtest::Error::NotFound(why)) if !callsign_pgtest::under_ci() => {
            eprintln!("failover: skipped, no PostgreSQL: {why}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let standby = Cluster::standby_of(&primary, Options::default())?;
    let url = primary.server().fresh_schema_blocking("failover")?;
    // The same schema on the standby: only the port differs.
    let tail = url
        .strip_prefix(primary.url())
        .ok_or_else(|| anyhow!("schema URL {url} is not on {}", primary.url()))?;
    let standby_url = format!("{}{tail}", standby.url());

    // Two nodes on the primary; devices A, B, C, D with a token each, and a script E.
    let (mut node1, account) = TestServer::prepare_on(&url, "SYN")?;
    node1.serve(0)?;
    let mut node2 = node1.node()?;
    let (port1, port2) = (node1.port(), node2.port());
    let dirs = [
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    ];
    let [a, b, c, d] = [0, 1, 2, 3].map(|i| Cli::new(dirs[i].path()));
    a.login(&node1.url, &node1.token(&account, "laptop-a")?)?;
    b.login(&node2.url, &node1.token(&account, "laptop-b")?)?;
    c.login(&node2.url, &node1.token(&account, "laptop-c")?)?;
    d.login(&node1.url, &node1.token(&account, "laptop-d")?)?;
    let script = Script {
        url: node2.url.clone(),
        token: node1.token(&account, "ci-script")?,
    };

    // A captures SYN-1..5; everyone syncs; the standby replays all of it.
    for i in 1..=5 {
        a.add(&format!("before the standby stops {i}"), &[])?;
    }
    for dev in [&a, &b, &c, &d] {
        dev.ok(&["sync"])?;
    }
    standby.wait_replayed(&primary, Duration::from_secs(20))?;
    let held_b = keyed(&b.list()?)?;
    ensure!(held_b.len() == 5, "B holds SYN-1..5: {held_b:?}");

    // The standby stops, so it falls behind: A captures SYN-6..10 through node 1 and C pulls
    // them through node 2.
    standby.stop()?;
    for i in 6..=10 {
        a.add(&format!("after the standby stopped {i}"), &[])?;
    }
    a.ok(&["sync"])?;
    c.ok(&["sync"])?;
    let held_a = keyed(&a.list()?)?;
    let held_c = keyed(&c.list()?)?;
    ensure!(
        numbers(&held_a)? == (1..=10).collect::<Vec<_>>(),
        "{held_a:?}"
    );
    ensure!(sorted(&held_c) == sorted(&held_a), "C holds what A holds");

    // D captures SYN-11 and syncs; then D's disk is lost: no device holds SYN-11 any more.
    let d_task = d.add("captured on a laptop lost before the failover", &[])?;
    d.ok(&["sync"])?;
    ensure!(d.json(&["show", &d_task])?["key"] == "SYN-11");
    std::fs::remove_dir_all(&d.dir)?;
    // A script files SYN-12 over the HTTP API and keeps only the key it was answered. It
    // never reads the change feed, so it holds SYN-12 without SYN-11. (Without it SYN-11 would
    // be above every key brought back, unknown to the promoted standby, and B's capture below
    // would get it: see the module doc.)
    let e_task = script.file("filed by the CI script")?;
    ensure!(e_task.0 == "SYN-12", "{e_task:?}");

    // The primary dies; the standby (behind: it has SYN-1..5) is started and promoted; the
    // admin restarts both nodes on it. Nobody runs `recovery start`.
    primary.kill()?;
    node1.stop();
    node2.stop();
    standby.start_again()?;
    standby.promote()?;
    for (node, port) in [(&mut node1, port1), (&mut node2, port2)] {
        node.use_database(&standby_url)?;
        node.serve(port)?;
    }
    let status = node1.run(&["recovery", "status"])?;
    assert_eq!(status["recovering"], json!([]), "nobody told the server");

    // B captures. A, which saw the newest history, syncs first: its cursor is past the end of
    // the promoted feed, so the account recovers at once and A's keys go back.
    let during = b.add("captured after the failover", &[])?;
    a.ok(&["sync"])?;
    let status = node1.run(&["recovery", "status"])?;
    assert_eq!(status["recovering"][0]["reason"], "detected", "{status}");
    assert_eq!(status["recovering"][0]["last"], 10, "A's keys: {status}");
    // (Had B synced first, its cursor being within the promoted feed, nothing would have told
    // the server yet: B's capture would have been numbered SYN-6 at once, and A's SYN-6 a
    // clash. docs/RECOVERY.md, "What this cannot catch".)
    let out = b.output(&["sync"])?;
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "B's capture waits: {said}");
    assert!(said.contains("recovering"), "says why: {said}");
    let shown = b.json(&["show", &during])?;
    assert_eq!(
        shown["key"],
        Value::Null,
        "provisional while recovering: {shown}"
    );
    c.ok(&["sync"])?;
    let answer = script.bring_back(&e_task)?;
    assert_eq!(answer["checked_in"], true, "{answer}");
    assert_eq!(answer["results"][0]["task"]["key"], "SYN-12", "{answer}");

    let status = node1.run(&["recovery", "status"])?;
    assert_eq!(status["recovering"][0]["last"], 12, "{status}");
    assert_eq!(lost(&status), ["SYN-11"], "{status}");
    // Still waited for: the owner's account token, which no device uses, and D, gone with
    // its disk. Everyone else has checked in, so the admin ends the wait by hand, knowing
    // which devices have not (docs/RECOVERY.md).
    let mut waiting: Vec<&str> = status["waiting_for"]
        .as_array()
        .map(|w| w.iter().filter_map(|d| d["device"].as_str()).collect())
        .unwrap_or_default();
    waiting.sort_unstable();
    assert_eq!(waiting, ["default", "laptop-d"], "{status}");
    node1.run(&["recovery", "end", "--account", &account.id.to_string()])?;

    let status = node1.run(&["recovery", "status"])?;
    assert_eq!(status["recovering"], json!([]), "{status}");
    assert_eq!(lost(&status), ["SYN-11"], "{status}");
    assert_eq!(status["clashes"], json!([]), "{status}");

    // Numbering resumes past every key brought back; SYN-11 is never handed out again.
    b.ok(&["sync"])?;
    assert_eq!(b.json(&["show", &during])?["key"], "SYN-13");
    let after = c.add("captured once recovery ended", &[])?;
    c.ok(&["sync"])?;
    assert_eq!(c.json(&["show", &after])?["key"], "SYN-14");

    // The server: no key names two tasks, SYN-11 names none.
    let on_server = server_tasks(&node1.url, &account.token)?;
    let mut by_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in &on_server {
        let key = t.key.clone().ok_or_else(|| anyhow!("unkeyed: {t:?}"))?;
        by_key.entry(key).or_default().push(t.uuid.to_string());
    }
    for (key, uuids) in &by_key {
        assert_eq!(uuids.len(), 1, "{key} names {uuids:?}");
    }
    let mut numbers_on_server: Vec<u64> = on_server.iter().filter_map(|t| t.number).collect();
    numbers_on_server.sort_unstable();
    assert_eq!(
        numbers_on_server,
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14]
    );
    assert_eq!(script.get("SYN-11")?, None, "the lost number names no task");

    // Every key each device held before the failover names the same task, through either node.
    let held_e: Held = vec![(e_task.1.clone(), e_task.0.clone())];
    for (name, held, via) in [
        ("A", &held_a, &node1.url),
        ("B", &held_b, &node2.url),
        ("C", &held_c, &node1.url),
        ("E", &held_e, &node2.url),
    ] {
        let via = Script {
            url: via.clone(),
            token: script.token.clone(),
        };
        for (uuid, key) in held {
            let t = via
                .get(key)?
                .ok_or_else(|| anyhow!("{name}'s {key} names no task"))?;
            assert_eq!(t["uuid"], uuid.as_str(), "{name}'s {key}");
        }
    }
    // And every device agrees with the server.
    let want: Held = sorted(
        &on_server
            .iter()
            .map(|t| (t.uuid.to_string(), t.key.clone().unwrap_or_default()))
            .collect::<Held>(),
    );
    for (name, dev) in [("A", &a), ("B", &b), ("C", &c)] {
        dev.ok(&["sync"])?;
        assert_eq!(sorted(&keyed(&dev.list()?)?), want, "device {name}");
    }
    eprintln!("failover: {:?}", began.elapsed());
    Ok(())
}

/// A script that files tasks over the HTTP API with a token of its own, as a CI job does: it
/// keeps the keys it was answered and never reads the change feed.
struct Script {
    url: String,
    token: String,
}

impl Script {
    fn rt() -> Result<tokio::runtime::Runtime> {
        Ok(tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?)
    }

    /// `PUT /v1/tasks/{uuid}`; the key and UUID of the task made.
    fn file(&self, description: &str) -> Result<(String, String)> {
        let uuid = uuid::Uuid::new_v4();
        let body = NewTask::new("SYN", description);
        let res = Self::rt()?.block_on(async {
            let res = reqwest::Client::new()
                .put(format!("{}/v1/tasks/{uuid}", self.url))
                .bearer_auth(&self.token)
                .header("Idempotency-Key", format!("ci-{uuid}"))
                .json(&body)
                .send()
                .await?;
            let status = res.status();
            Ok::<_, anyhow::Error>((status, res.json::<Value>().await?))
        })?;
        let (status, task) = res;
        if status.as_u16() != 201 {
            bail!("PUT /v1/tasks answered {status}: {task}");
        }
        let key = task["key"].as_str().ok_or_else(|| anyhow!("{task}"))?;
        Ok((key.to_owned(), uuid.to_string()))
    }

    /// `POST /v1/recovery/witness` with the one task it holds, as its last batch.
    fn bring_back(&self, (key, uuid): &(String, String)) -> Result<Value> {
        let req = WitnessRequest {
            tasks: vec![WitnessedTask {
                idempotency_key: format!("ci-witness-{uuid}"),
                uuid: uuid.parse()?,
                key: key.clone(),
                previous_keys: Vec::new(),
                created_by: None,
                fields: NewTask::new("SYN", "filed by the CI script"),
            }],
            complete: true,
        };
        Self::rt()?.block_on(async {
            let client = callsign_sync::client::Client::new(
                &self.url,
                callsign_sync::Token::new(&self.token),
            )?;
            let answer = client
                .witness(&req)
                .await
                .map_err(|e| anyhow!("witness: {}", e.error))?;
            Ok(serde_json::to_value(answer)?)
        })
    }

    /// `GET /v1/tasks/{key}`: the task, or `None` on 404.
    fn get(&self, key: &str) -> Result<Option<Value>> {
        Self::rt()?.block_on(async {
            let res = reqwest::Client::new()
                .get(format!("{}/v1/tasks/{key}", self.url))
                .bearer_auth(&self.token)
                .send()
                .await?;
            match res.status().as_u16() {
                200 => Ok(Some(res.json().await?)),
                404 => Ok(None),
                s => bail!("GET /v1/tasks/{key} answered {s}: {}", res.text().await?),
            }
        })
    }
}

/// The numbers of `held`'s keys, sorted.
fn numbers(held: &Held) -> Result<Vec<u64>> {
    let mut n = held
        .iter()
        .map(|(_, k)| {
            k.strip_prefix("SYN-")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| anyhow!("key {k}"))
        })
        .collect::<Result<Vec<u64>>>()?;
    n.sort_unstable();
    Ok(n)
}

fn sorted(held: &Held) -> Held {
    let set: BTreeSet<(String, String)> = held.iter().cloned().collect();
    set.into_iter().collect()
}

/// The keys `recovery status` lists as lost.
fn lost(status: &Value) -> Vec<String> {
    status["lost"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|k| k["key"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
