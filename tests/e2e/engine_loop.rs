//! The desktop app's path: the engine's own sync loop in-process, its events, going offline and
//! coming back (`network_up`), and a second process (the CLI) queueing beside the loop.
use std::time::Duration;

use anyhow::{bail, Result};
use callsign_sync::{Engine, Event, NewTaskInput};
use tokio::sync::broadcast::Receiver;
use uuid::Uuid;

use crate::fixture::{Cli, TestServer};

/// Waits (bounded) until the task has a key; returns it.
async fn key_of(engine: &Engine, events: &mut Receiver<Event>, uuid: Uuid) -> Result<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(k) = engine.get(&uuid.to_string())?.key {
            return Ok(k);
        }
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(_) => {}
            Err(_) => bail!("no key for {uuid} within 30 s"),
        }
    }
}

async fn offline_status(events: &mut Receiver<Event>) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            // (A pass that was pulling when the server stopped may report offline before the
            // new task is queued; wait for the status that counts it.)
            Ok(Ok(Event::SyncStatus(s))) if s.online == Some(false) && s.pending >= 1 => {
                assert!(s.last_error.is_some(), "{s:?}");
                return Ok(());
            }
            Ok(_) => {}
            Err(_) => bail!("no offline status within 30 s"),
        }
    }
}

#[test]
fn the_loop_syncs_on_write_survives_an_outage_and_picks_up_cli_rows() -> Result<()> {
    let (mut server, account) = TestServer::start("APP")?;
    let port = server.port();
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let engine = Engine::open(home.path())?;
        let mut events = engine.subscribe();
        engine.start();
        let new = |d: &str| NewTaskInput {
            description: d.into(),
            ..Default::default()
        };

        let first = engine.create(new("online"))?;
        assert_eq!(key_of(&engine, &mut events, first.uuid).await?, "APP-1");

        server.stop();
        let second = engine.create(new("during the outage"))?;
        offline_status(&mut events).await?;
        assert!(engine.get(&second.uuid.to_string())?.key.is_none());
        server.serve(port)?;
        engine.network_up();
        assert_eq!(key_of(&engine, &mut events, second.uuid).await?, "APP-2");
        // Another process queues; this process's loop notices and sends it.
        let from_cli = cli.add("from the CLI", &[])?;
        assert_eq!(
            key_of(&engine, &mut events, from_cli.parse()?).await?,
            "APP-3"
        );
        let status = engine.status()?;
        assert_eq!(
            (status.pending, status.in_flight, status.online),
            (0, 0, Some(true))
        );
        engine.stop().await;
        anyhow::Ok(())
    })
}
