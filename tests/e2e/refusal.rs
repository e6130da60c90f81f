//! A request the server refuses (422 invalid body, 404 unknown project) marks only that task
//! failed, with the server's message; the rest sync. The user fixes the cause and retries: a new
//! idempotency key, the same UUID.
use anyhow::Result;

use crate::fixture::{server_tasks, Cli, TestServer};

#[test]
fn a_refused_task_fails_alone_with_the_server_message_and_can_be_retried() -> Result<()> {
    let (server, account) = TestServer::start("REF")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;
    let a = cli.add("fine one", &[])?;
    let bad_tag = cli.add("shouting tag", &["--tag", "LOUD"])?;
    let b = cli.add("fine two", &[])?;
    let no_project = cli.add("in a project not created yet", &["--project", "NEW"])?;
    let c = cli.add("fine three", &[])?;

    cli.ok(&["sync"])?;
    let list = cli.list()?;
    let get = |u: &str| {
        list.iter()
            .find(|t| t["uuid"] == u)
            .cloned()
            .unwrap_or_default()
    };
    for (u, key) in [(&a, "REF-1"), (&b, "REF-2"), (&c, "REF-3")] {
        assert_eq!(get(u)["key"], key);
        assert_eq!(get(u)["sync_state"], "synced");
    }
    let t = get(&bad_tag);
    assert_eq!(
        (t["sync_state"].as_str(), t["key"].as_str()),
        (Some("failed"), None)
    );
    let msg = t["last_error"].as_str().unwrap_or_default();
    assert!(
        msg.contains("invalid_body") && msg.contains("LOUD"),
        "{msg}"
    );
    let t = get(&no_project);
    assert_eq!(t["sync_state"], "failed");
    assert!(
        t["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("project_not_found"),
        "{t}"
    );
    let text = cli.ok(&["list"])?;
    assert!(text.contains("failed: "), "{text}");

    // Create the project, retry: the same UUID goes out under a new idempotency key.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let status = rt.block_on(async {
        reqwest::Client::new()
            .post(format!("{}/v1/projects", server.url))
            .bearer_auth(&account.token)
            .json(&serde_json::json!({"name": "New", "prefix": "NEW"}))
            .send()
            .await
            .map(|r| r.status().as_u16())
    })?;
    assert_eq!(status, 201);
    cli.ok(&["retry", &no_project[..8]])?;
    cli.ok(&["sync"])?;
    let t = cli.json(&["show", &no_project])?;
    assert_eq!(
        (t["key"].as_str(), t["sync_state"].as_str()),
        (Some("NEW-1"), Some("synced"))
    );
    assert_eq!(
        server_tasks(&server.url, &account.token)?.len(),
        4,
        "the refused tag never landed"
    );
    Ok(())
}
