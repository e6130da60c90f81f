//! The OS's network-change signal, where there is one: an address appearing on an interface
//! (Wi-Fi joined, a cable plugged in, a VPN up) makes the loop try at once
//! ([`crate::Engine::network_up`]) instead of waiting for its next probe or backoff. Linux reads
//! it from netlink, macOS from the system configuration store, Windows from the IP helper
//! (through `if-watch`); elsewhere `if-watch` polls every 10 s. The probe of `/healthz` stays
//! the guarantee; this only shortens the wait when the machine itself was offline.
use futures_util::StreamExt;
use if_watch::{tokio::IfWatcher, IfEvent};

use crate::Engine;

/// Changes closer together than this are one attempt.
const BURST: std::time::Duration = std::time::Duration::from_secs(1);

/// An event worth a sync attempt: a new address that is not a loopback one.
pub fn wakes(ev: &IfEvent) -> bool {
    matches!(ev, IfEvent::Up(net) if !net.addr().is_loopback())
}

/// Runs until the watcher ends (or cannot start: then there is no signal, and the probe does).
pub async fn run(engine: Engine) {
    let mut watcher = match IfWatcher::new() {
        Ok(w) => w,
        Err(e) => {
            tracing::info!("no network-change signal ({e}); relying on the reconnect probe");
            return;
        }
    };
    // A burst of changes (an interface brings several addresses; at start the watcher reports
    // every address already there) is one attempt.
    let mut last: Option<std::time::Instant> = None;
    while let Some(ev) = watcher.next().await {
        match ev {
            Ok(ev) if wakes(&ev) => {
                if last.is_some_and(|t| t.elapsed() < BURST) {
                    continue;
                }
                last = Some(std::time::Instant::now());
                tracing::debug!(?ev, "network change: syncing now");
                engine.network_up();
            }
            Ok(_) => {}
            Err(e) => tracing::debug!("network-change signal: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::new_address(IfEvent::Up("192.168.1.20/24".parse().unwrap()), true)]
    #[case::new_v6_address(IfEvent::Up("2001:db8::5/64".parse().unwrap()), true)]
    #[case::loopback(IfEvent::Up("127.0.0.1/8".parse().unwrap()), false)]
    #[case::gone(IfEvent::Down("192.168.1.20/24".parse().unwrap()), false)]
    fn which_changes_wake_the_loop(#[case] ev: IfEvent, #[case] want: bool) {
        assert_eq!(wakes(&ev), want);
    }
}
