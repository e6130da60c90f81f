//! The storage conformance suite (`callsign_server::storage::conformance`) on every backend
//! this build has: the embedded SQLite data dir, and PostgreSQL.
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

/// Both stores on PostgreSQL (`PgAlloc`, `PgTasks`), on a fresh schema, as `pg::open` gives
/// them to a node (skipped when there is no PostgreSQL, outside CI).
async fn postgres() -> Option<Backend> {
    let pg = callsign_pgtest::shared()?;
    let url = pg.fresh_schema("conformance").await.unwrap();
    let (alloc, tasks) = callsign_server::pg::open(&url, 8, callsign_server::pg::alloc::LEASE)
        .await
        .unwrap();
    Some(Backend {
        alloc: std::sync::Arc::new(alloc),
        tasks: std::sync::Arc::new(tasks),
        keep: Box::new(()),
    })
}

mod postgres {
    callsign_server::storage_conformance!(super::postgres);
}
