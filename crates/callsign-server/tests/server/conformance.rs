//! The storage conformance suite (`callsign_server::storage::conformance`) on every backend
//! this build has: the embedded SQLite data dir.
use callsign_server::storage::conformance::Backend;
use callsign_server::{AppState, Config};

/// A fresh SQLite data dir, opened as the server opens it.
async fn sqlite() -> Option<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::open(Config::new(dir.path())).await.unwrap();
    Some(Backend {
        alloc: state.alloc.clone(),
        tasks: state.tasks.clone(),
        keep: Box::new((state, dir)),
    })
}

mod sqlite {
    callsign_server::storage_conformance!(super::sqlite);
}
