//! Hearing other nodes: a connection of its own (not the pool's) that `LISTEN`s on the
//! server's channels and hands each `NOTIFY` to a callback. A `NOTIFY` sent inside a
//! transaction is delivered when it commits, to every node listening then; one sent while
//! this connection was down is lost, so each (re)connect is announced as [`Heard::Listening`]
//! and the callback treats it as "anything may have happened".
use std::time::Duration;

use tokio_postgres::{AsyncMessage, NoTls};

/// Members were removed: payload is the account id. Every node drops its cached tokens.
pub const MEMBERS: &str = "callsign_members";
/// A change committed in an account (payload: its id): held change requests read again.
pub const FEED: &str = "callsign_feed";

/// What the listener heard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Listening (again): notifications sent before now may have been missed.
    Listening,
    Notify {
        channel: String,
        payload: String,
    },
}

/// Listens on `channels` for as long as the runtime runs, reconnecting a second after a loss.
pub fn spawn(
    url: String,
    channels: &'static [&'static str],
    on: impl Fn(Heard) + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = listen(&url, channels, &on).await {
                tracing::warn!("LISTEN connection lost, reconnecting in 1 s: {e}");
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

async fn listen(
    url: &str,
    channels: &[&str],
    on: &(impl Fn(Heard) + Send + Sync),
) -> Result<(), tokio_postgres::Error> {
    let (client, mut conn) = tokio_postgres::connect(url, NoTls).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| conn.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    let heard = Heard::Notify {
                        channel: n.channel().to_owned(),
                        payload: n.payload().to_owned(),
                    };
                    if tx.send(heard).is_err() {
                        return Ok(());
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
    });
    let sql: String = channels.iter().map(|c| format!("LISTEN {c};")).collect();
    client.batch_execute(&sql).await?;
    on(Heard::Listening);
    while let Some(heard) = rx.recv().await {
        on(heard);
    }
    drop(client);
    match driver.await {
        Ok(r) => r,
        Err(_) => Ok(()),
    }
}
