//! Taskwarrior 3 syncing with the real server: the Taskwarrior side is TaskChampion's own
//! `Replica` with its remote sync client (the library and protocol `task sync` uses), the
//! Callsign side the real `callsign` CLI.
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use taskchampion::storage::AccessMode;
use taskchampion::{Operations, Replica, ServerConfig, SqliteStorage, Status};
use uuid::Uuid;

use crate::cli::Cli;
use crate::fixture::{get_text, server_tasks, Account, TestServer, DATABASE_ENV};

/// A Taskwarrior replica (TaskChampion's SQLite storage in a dir of its own) set up to sync
/// with one server.
struct Taskwarrior {
    rt: tokio::runtime::Runtime,
    replica: Replica<SqliteStorage>,
    url: String,
    client_id: Uuid,
    secret: String,
}

impl Taskwarrior {
    fn open(dir: &Path, url: &str, client_id: Uuid, secret: &str) -> Result<Taskwarrior> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let storage = rt.block_on(SqliteStorage::new(dir, AccessMode::ReadWrite, true))?;
        Ok(Taskwarrior {
            rt,
            replica: Replica::new(storage),
            url: url.to_owned(),
            client_id,
            secret: secret.to_owned(),
        })
    }

    /// One `task sync`.
    fn sync(&mut self) -> Result<()> {
        let config = ServerConfig::Remote {
            url: self.url.clone(),
            client_id: self.client_id,
            encryption_secret: self.secret.as_bytes().to_vec(),
        };
        let (rt, replica) = (&self.rt, &mut self.replica);
        rt.block_on(async {
            let mut server = config.into_server().await?;
            replica.sync(&mut server, false).await
        })
        .context("task sync")
    }

    /// `task add DESCRIPTION [project:P]`; returns the new task's UUID.
    fn add(&mut self, description: &str, project: Option<&str>) -> Result<Uuid> {
        let uuid = Uuid::new_v4();
        let (rt, replica) = (&self.rt, &mut self.replica);
        rt.block_on(async {
            let mut ops = Operations::new();
            let mut t = replica.create_task(uuid, &mut ops).await?;
            t.set_description(description.to_owned(), &mut ops)?;
            t.set_status(Status::Pending, &mut ops)?;
            t.set_entry(Some(chrono::Utc::now()), &mut ops)?;
            if let Some(p) = project {
                t.set_value("project", Some(p.to_owned()), &mut ops)?;
            }
            replica.commit_operations(ops).await
        })?;
        Ok(uuid)
    }

    /// Sets one property of a task (`task UUID modify …`).
    fn set(&mut self, uuid: Uuid, property: &str, value: Option<&str>) -> Result<()> {
        let (rt, replica) = (&self.rt, &mut self.replica);
        rt.block_on(async {
            let mut ops = Operations::new();
            let mut t = replica
                .get_task(uuid)
                .await?
                .ok_or_else(|| taskchampion::Error::Usage(format!("no task {uuid}")))?;
            t.set_value(property, value.map(str::to_owned), &mut ops)?;
            replica.commit_operations(ops).await
        })?;
        Ok(())
    }

    /// Every task, by UUID.
    fn tasks(&mut self) -> Result<HashMap<Uuid, TwTask>> {
        let (rt, replica) = (&self.rt, &mut self.replica);
        let all = rt.block_on(replica.all_task_data())?;
        Ok(all
            .into_iter()
            .map(|(u, t)| {
                let get = |p: &str| t.get(p).map(str::to_owned);
                (
                    u,
                    TwTask {
                        description: get("description").unwrap_or_default(),
                        status: get("status").unwrap_or_default(),
                        key: get("key"),
                    },
                )
            })
            .collect())
    }

    /// One task's properties as TaskChampion stores them.
    fn properties(&mut self, uuid: Uuid) -> Result<HashMap<String, String>> {
        let (rt, replica) = (&self.rt, &mut self.replica);
        let data = rt
            .block_on(replica.get_task_data(uuid))?
            .ok_or_else(|| anyhow!("no task {uuid} in Taskwarrior"))?;
        Ok(data
            .properties()
            .map(|p| (p.clone(), data.get(p).unwrap_or_default().to_owned()))
            .collect())
    }

    fn key(&mut self, uuid: Uuid) -> Result<Option<String>> {
        Ok(self.tasks()?.remove(&uuid).and_then(|t| t.key))
    }
}

/// A task as the Taskwarrior side holds it.
struct TwTask {
    description: String,
    status: String,
    key: Option<String>,
}

/// A server with one linked account (prefix `prefix`) and a Taskwarrior set up for it.
fn linked(prefix: &str, tw_dir: &Path) -> Result<(TestServer, Account, Taskwarrior)> {
    let (mut server, account) = TestServer::prepare(prefix)?;
    let (client_id, secret) = server.link_taskwarrior(&account)?;
    server.serve(0)?;
    let tw = Taskwarrior::open(tw_dir, &server.url, client_id, &secret)?;
    Ok((server, account, tw))
}

/// `PATCH /v1/tasks/{key}` as a Callsign device sends it.
fn patch(url: &str, token: &str, key: &str, body: serde_json::Value) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let res = reqwest::Client::new()
            .patch(format!("{url}/v1/tasks/{key}"))
            .bearer_auth(token)
            .header("Idempotency-Key", Uuid::new_v4().to_string())
            .json(&body)
            .send()
            .await?;
        if !res.status().is_success() {
            bail!("PATCH {key}: {} {}", res.status(), res.text().await?);
        }
        Ok(())
    })
}

/// Numbers of the keys with `prefix`, checked distinct.
fn numbers(keys: impl IntoIterator<Item = String>, prefix: &str) -> Result<BTreeSet<u64>> {
    let mut out = BTreeSet::new();
    for k in keys {
        let n = k
            .strip_prefix(&format!("{prefix}-"))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| anyhow!("{k} is not a {prefix} key"))?;
        if !out.insert(n) {
            bail!("key {k} given twice");
        }
    }
    Ok(out)
}

#[test]
fn taskwarrior_tasks_get_keys_in_one_sync_and_edits_flow_both_ways() -> Result<()> {
    let dirs = [tempfile::tempdir()?, tempfile::tempdir()?];
    let (server, account, mut tw) = linked("SYN", dirs[0].path())?;
    let cli = Cli::new(dirs[1].path());
    cli.login(&server.url, &account.token)?;

    // Created in Taskwarrior, keyed by one `task sync`.
    let a = tw.add("Write the release notes", Some("SYN"))?;
    let b = tw.add("Book the venue", None)?;
    tw.sync()?;
    let (ka, kb) = (tw.key(a)?, tw.key(b)?);
    let keys: Vec<String> = [ka.clone(), kb.clone()].into_iter().flatten().collect();
    assert_eq!(
        keys.len(),
        2,
        "both tasks keyed after one sync: {ka:?} {kb:?}"
    );
    assert_eq!(numbers(keys, "SYN")?, BTreeSet::from([1, 2]));
    let (ka, kb) = (ka.unwrap_or_default(), kb.unwrap_or_default());

    // The CLI sees them with the same keys.
    cli.ok(&["sync"])?;
    let shown = cli.json(&["show", &ka])?;
    assert_eq!(shown["description"], "Write the release notes");
    assert_eq!(shown["uuid"], a.to_string());

    // Created by the CLI, it reaches Taskwarrior with its key.
    let c: Uuid = cli.add("Send the invoices", &[])?.parse()?;
    cli.ok(&["sync"])?;
    let kc = cli.json(&["show", &c.to_string()])?["key"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(kc, "SYN-3");
    tw.sync()?;
    let tasks = tw.tasks()?;
    let t = tasks
        .get(&c)
        .ok_or_else(|| anyhow!("the CLI's task is not in Taskwarrior"))?;
    assert_eq!(
        (t.description.as_str(), t.key.as_deref()),
        ("Send the invoices", Some("SYN-3"))
    );

    // An edit on each side reaches the other.
    tw.set(a, "description", Some("Write the release notes for 2.0"))?;
    tw.sync()?;
    cli.ok(&["sync"])?;
    assert_eq!(
        cli.json(&["show", &ka])?["description"],
        "Write the release notes for 2.0"
    );
    cli.ok(&["done", &kc])?;
    cli.ok(&["sync"])?;
    tw.sync()?;
    assert_eq!(tw.tasks()?[&c].status, "completed");

    // Tags, priority and due: set in Taskwarrior, seen by the CLI ...
    let due = 1_796_112_000_i64; // 2026-12-01T08:00:00Z
    tw.set(b, "tag_home", Some(""))?;
    tw.set(b, "priority", Some("M"))?;
    tw.set(b, "due", Some(&due.to_string()))?;
    tw.sync()?;
    cli.ok(&["sync"])?;
    let shown = cli.json(&["show", &kb])?;
    assert_eq!(shown["tags"], serde_json::json!(["home"]));
    assert_eq!(shown["priority"], "M");
    assert_eq!(shown["due"], "2026-12-01T08:00:00Z");
    // ... and set by a Callsign device, seen by Taskwarrior.
    patch(
        &server.url,
        &account.token,
        &ka,
        serde_json::json!({"tags": ["ops"], "priority": "H", "due": "2026-12-02T08:00:00Z"}),
    )?;
    tw.sync()?;
    let props = tw.properties(a)?;
    assert_eq!(props.get("tag_ops").map(String::as_str), Some(""));
    assert_eq!(props.get("priority").map(String::as_str), Some("H"));
    assert_eq!(
        props.get("due").map(String::as_str),
        Some((due + 86_400).to_string().as_str())
    );

    // `key` is the server's: a Taskwarrior edit of it is put back.
    tw.set(b, "key", Some("HACK-1"))?;
    tw.sync()?;
    assert_eq!(tw.key(b)?.as_deref(), Some(kb.as_str()));
    let on_server = server_tasks(&server.url, &account.token)?;
    assert_eq!(on_server.len(), 3);
    let metrics = get_text(&format!("{}/metrics", server.url))?;
    for line in [
        "callsign_taskwarrior_total{event=\"keyed\"} 2",
        "callsign_taskwarrior_total{event=\"restored\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} not in /metrics:\n{metrics}");
    }
    assert!(on_server
        .iter()
        .any(|t| t.uuid == b && t.key.as_deref() == Some(kb.as_str())));
    Ok(())
}

#[test]
fn five_hundred_offline_taskwarrior_tasks_and_concurrent_cli_creates_are_numbered_without_gaps(
) -> Result<()> {
    let dirs = [tempfile::tempdir()?, tempfile::tempdir()?];
    let (server, account, mut tw) = linked("OPS", dirs[0].path())?;
    let mut made = Vec::new();
    for i in 0..500 {
        made.push(tw.add(&format!("Offline task {i}"), None)?);
    }
    // A Callsign device creates while Taskwarrior syncs.
    let cli = Cli::new(dirs[1].path());
    cli.login(&server.url, &account.token)?;
    let creator = std::thread::spawn(move || -> Result<usize> {
        for i in 0..20 {
            cli.add(&format!("From the CLI {i}"), &[])?;
        }
        cli.ok(&["sync"])?;
        Ok(20)
    });
    tw.sync()?;
    let from_cli = creator
        .join()
        .map_err(|_| anyhow!("CLI thread panicked"))??;
    tw.sync()?;

    let tasks = tw.tasks()?;
    let keys: Vec<String> = made
        .iter()
        .map(|u| {
            tasks
                .get(u)
                .and_then(|t| t.key.clone())
                .ok_or_else(|| anyhow!("{u} has no key"))
        })
        .collect::<Result<_>>()?;
    assert_eq!(numbers(keys, "OPS")?.len(), 500);
    let on_server = server_tasks(&server.url, &account.token)?;
    assert_eq!(on_server.len(), 500 + from_cli);
    let all = numbers(on_server.iter().filter_map(|t| t.key.clone()), "OPS")?;
    let want: BTreeSet<u64> = (1..=(500 + from_cli) as u64).collect();
    assert_eq!(
        all, want,
        "gap-free and distinct across Taskwarrior and the CLI"
    );
    Ok(())
}

#[test]
fn a_sync_killed_mid_request_and_repeated_gives_no_second_task_or_number() -> Result<()> {
    for point in ["taskwarrior.after_version", "taskwarrior.after_keys"] {
        let dirs = [tempfile::tempdir()?];
        let (mut server, account, mut tw) = linked("DEV", dirs[0].path())?;
        let port = server.port();
        let made: Vec<Uuid> = (0..5)
            .map(|i| tw.add(&format!("Task {i}"), None))
            .collect::<Result<_>>()?;
        server.serve_crashing(port, Some(point))?;
        tw.url = server.url.clone();
        assert!(tw.sync().is_err(), "{point}: the sync should have failed");
        crate::cli::wait_for(
            std::time::Duration::from_secs(10),
            "the server to die",
            || Ok(server.exited()),
        )?;
        server.serve(port)?;
        tw.sync()?;
        tw.sync()?;
        let tasks = tw.tasks()?;
        assert_eq!(tasks.len(), 5, "{point}: no task twice in Taskwarrior");
        let keys: Vec<String> = made
            .iter()
            .map(|u| {
                tasks[u]
                    .key
                    .clone()
                    .ok_or_else(|| anyhow!("{point}: {u} has no key"))
            })
            .collect::<Result<_>>()?;
        assert_eq!(numbers(keys, "DEV")?, (1..=5).collect(), "{point}");
        let on_server = server_tasks(&server.url, &account.token)?;
        assert_eq!(on_server.len(), 5, "{point}: no task twice on the server");
    }
    Ok(())
}

#[test]
fn two_nodes_syncing_one_account_at_once_give_every_task_one_key() -> Result<()> {
    if std::env::var(DATABASE_ENV).as_deref() != Ok("postgres") {
        eprintln!("two nodes need PostgreSQL ({DATABASE_ENV}=postgres); skipped");
        return Ok(());
    }
    let dirs = [tempfile::tempdir()?, tempfile::tempdir()?];
    let (first, account, mut tw1) = linked("WEB", dirs[0].path())?;
    let second = first.node()?;
    let mut tw2 = Taskwarrior::open(dirs[1].path(), &second.url, tw1.client_id, &tw1.secret)?;
    for i in 0..40 {
        tw1.add(&format!("Node A task {i}"), None)?;
        tw2.add(&format!("Node B task {i}"), None)?;
    }
    let other = std::thread::spawn(move || -> Result<Taskwarrior> {
        tw2.sync()?;
        Ok(tw2)
    });
    tw1.sync()?;
    let mut tw2 = other
        .join()
        .map_err(|_| anyhow!("sync thread panicked"))??;
    for _ in 0..2 {
        tw1.sync()?;
        tw2.sync()?;
    }
    let on_server = server_tasks(&first.url, &account.token)?;
    assert_eq!(on_server.len(), 80);
    let want: BTreeSet<u64> = (1..=80).collect();
    assert_eq!(
        numbers(on_server.iter().filter_map(|t| t.key.clone()), "WEB")?,
        want
    );
    for tw in [&mut tw1, &mut tw2] {
        let tasks = tw.tasks()?;
        assert_eq!(tasks.len(), 80);
        let keys = tasks.values().filter_map(|t| t.key.clone());
        assert_eq!(
            numbers(keys, "WEB")?,
            want,
            "each replica has every key once"
        );
    }
    Ok(())
}

#[test]
fn a_wrong_secret_or_client_id_is_refused_and_the_chain_stays_usable() -> Result<()> {
    let dirs = [
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    ];
    let (server, account, mut tw) = linked("ACC", dirs[0].path())?;
    let mut wrong = Taskwarrior::open(dirs[1].path(), &server.url, tw.client_id, "guessed")?;
    wrong.add("Pushed with the wrong secret", None)?;
    let err = format!(
        "{:#}",
        wrong.sync().expect_err("a wrong secret syncs nothing")
    );
    assert!(err.contains("422"), "{err}");
    let mut stranger = Taskwarrior::open(dirs[2].path(), &server.url, Uuid::new_v4(), "x")?;
    stranger.add("From nobody", None)?;
    let err = format!(
        "{:#}",
        stranger
            .sync()
            .expect_err("an unknown client syncs nothing")
    );
    assert!(err.contains("403"), "{err}");

    let a = tw.add("The real one", None)?;
    tw.sync()?;
    assert_eq!(tw.key(a)?.as_deref(), Some("ACC-1"));
    let on_server = server_tasks(&server.url, &account.token)?;
    assert_eq!(on_server.len(), 1, "nothing of the refused pushes landed");
    Ok(())
}

/// `GET /v1/changes` as a device holds it: `since` the cursor, waiting up to `wait` seconds.
fn changes(url: &str, token: &str, since: Option<&str>, wait: u64) -> Result<serde_json::Value> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let query = match since {
        Some(c) => format!("since={c}&wait={wait}"),
        None => format!("wait={wait}"),
    };
    rt.block_on(async {
        let res = reqwest::Client::new()
            .get(format!("{url}/v1/changes?{query}"))
            .bearer_auth(token)
            .send()
            .await?;
        if !res.status().is_success() {
            bail!("GET /v1/changes: {} {}", res.status(), res.text().await?);
        }
        Ok(res.json().await?)
    })
}

#[test]
fn a_taskwarrior_edit_wakes_a_device_waiting_for_changes() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (server, account, mut tw) = linked("WAK", dir.path())?;
    let a = tw.add("Water the plants", None)?;
    tw.sync()?;
    assert_eq!(tw.key(a)?.as_deref(), Some("WAK-1"));
    let seen = changes(&server.url, &account.token, None, 0)?;
    let cursor = seen["cursor"]
        .as_str()
        .ok_or_else(|| anyhow!("no cursor in {seen}"))?
        .to_owned();

    // A device holds its request for up to 30 s; the edit lands about 300 ms in.
    let (url, token) = (server.url.clone(), account.token.clone());
    let started = std::time::Instant::now();
    // As the sync engine does, a wake-up that brings nothing (on PostgreSQL, a node's late
    // notice of the first sync's commit can arrive once the request is held) holds again
    // from its cursor.
    let held = std::thread::spawn(move || -> Result<serde_json::Value> {
        let mut cursor = cursor;
        loop {
            let left = 30u64.saturating_sub(started.elapsed().as_secs()).max(1);
            let answer = changes(&url, &token, Some(&cursor), left)?;
            let empty = answer["changes"].as_array().is_none_or(Vec::is_empty);
            if !empty || started.elapsed() >= std::time::Duration::from_secs(30) {
                return Ok(answer);
            }
            cursor = answer["cursor"]
                .as_str()
                .ok_or_else(|| anyhow!("no cursor in {answer}"))?
                .to_owned();
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    tw.set(a, "description", Some("Water the plants twice"))?;
    tw.sync()?;
    let answer = held
        .join()
        .map_err(|_| anyhow!("the held request panicked"))??;
    let took = started.elapsed();
    assert_eq!(
        answer["changes"][0]["description"], "Water the plants twice",
        "{answer}"
    );
    assert!(
        took < std::time::Duration::from_secs(10),
        "woken by the edit, not by the 30 s wait: {took:?}"
    );
    Ok(())
}
