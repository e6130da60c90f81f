//! The CLI's own edges (issue 20, items 5-8): task text never drives the terminal; the token
//! need not be an argument; `sync` takes over the lock of a holder that died; the default
//! project is learned on the first successful sync after an offline login.
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::fixture::{free_port, Cli, TestServer};

#[test]
fn list_and_show_escape_control_characters_and_json_stays_exact() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let evil = "pwn \u{1b}[2J\u{1b}]0;PWNED\u{7} done";
    let uuid = cli.add(evil, &["--notes", "line one\nline two\u{1b}[31m"])?;
    for args in [vec!["list"], vec!["show", uuid.as_str()]] {
        let out = cli.ok(&args)?;
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{7}'),
            "{args:?} printed raw control characters: {out:?}"
        );
        assert!(
            out.contains("pwn \\u{1b}[2J\\u{1b}]0;PWNED\\u{7} done"),
            "{out}"
        );
    }
    let show = cli.ok(&["show", &uuid])?;
    assert!(
        show.contains("line one\nline two\\u{1b}[31m"),
        "notes keep their lines: {show}"
    );
    let v = cli.json(&["show", &uuid])?;
    assert_eq!(v["description"], evil, "--json is exact");
    Ok(())
}

#[test]
fn login_reads_the_token_from_stdin_or_the_environment() -> Result<()> {
    let (server, account) = TestServer::start("TOK")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());

    let out = cli
        .command(&["login", "--server", &server.url])
        .env_remove("CALLSIGN_TOKEN")
        .output()?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--token-stdin") && err.contains("CALLSIGN_TOKEN"),
        "{err}"
    );

    let mut child = cli
        .command(&["login", "--server", &server.url, "--token-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        writeln!(stdin, "{}", account.token)?;
    }
    let out = child.wait_with_output()?;
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("new tasks go to TOK"));
    cli.add("via stdin", &[])?;
    cli.ok(&["sync", "--timeout", "10"])?;

    let other = tempfile::tempdir()?;
    let cli2 = Cli::new(other.path());
    let out = cli2
        .command(&["login", "--server", &server.url])
        .env("CALLSIGN_TOKEN", &account.token)
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    cli2.ok(&["sync", "--timeout", "10"])?;
    assert_eq!(
        cli2.list()?.len(),
        1,
        "the token from the environment works"
    );
    Ok(())
}

#[test]
fn sync_takes_over_the_lock_as_soon_as_its_holder_dies() -> Result<()> {
    let (server, account) = TestServer::start("LCK")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;
    cli.add("waits for the lock", &[])?;

    // Another process owns the data dir's sync lock (an OS lock on `sync.lock`, as the loop
    // takes it), and names itself in the file.
    let lock = home.path().join("sync.lock");
    let mut holder = std::process::Command::new("flock")
        .args(["-n", "-F"])
        .arg(&lock)
        .args(["sleep", "600"])
        .spawn()?;
    crate::fixture::wait_for(Duration::from_secs(10), "flock to hold the lock", || {
        Ok(std::fs::File::open(&lock)
            .map(|f| matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
            .unwrap_or(false))
    })?;
    std::fs::write(&lock, format!("{} 0\n", holder.id()))?;
    assert_eq!(cli.json(&["status"])?["loop_pid"], holder.id());

    let sync = cli
        .command(&["sync", "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    std::thread::sleep(Duration::from_secs(1));
    holder.kill()?;
    holder.wait()?;
    let died = Instant::now();
    let st = cli.json(&["status"])?;
    assert_ne!(st["loop_pid"], holder.id(), "status names a dead PID: {st}");
    let out = sync.wait_with_output()?;
    let took = died.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(10), "took over after {took:?}");
    assert_eq!(cli.list()?[0]["key"], "LCK-1");
    Ok(())
}

#[test]
fn the_default_project_is_learned_on_the_first_successful_sync() -> Result<()> {
    let (mut server, account) = TestServer::prepare("DEF")?;
    let port = free_port();
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&format!("http://127.0.0.1:{port}"), &account.token)?;
    let before = cli.add("captured offline", &[])?;
    assert_eq!(cli.json(&["show", &before])?["project"], "INBOX");
    server.serve(port)?;
    cli.ok(&["sync", "--timeout", "10"])?;
    let after = cli.add("captured online", &[])?;
    assert_eq!(cli.json(&["show", &after])?["project"], "DEF");
    cli.ok(&["sync", "--timeout", "10"])?;
    assert_eq!(cli.json(&["show", &after])?["key"], "DEF-1");
    Ok(())
}
