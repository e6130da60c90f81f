//! The storage conformance suite (`callsign-storage-conformance`) on PostgreSQL: both stores
//! (`PgAlloc`, `PgTasks`) on a fresh schema of a throwaway cluster, as `open` gives them to a
//! node. Skipped when there is no PostgreSQL, outside CI (`callsign-pgtest`).
use std::sync::Arc;

use callsign_storage_conformance::Backend;

async fn postgres() -> Option<Backend> {
    let pg = callsign_pgtest::shared()?;
    let url = pg.fresh_schema("conformance").await.unwrap();
    let (alloc, tasks) =
        callsign_storage_postgres::open(&url, 8, callsign_storage_postgres::alloc::LEASE)
            .await
            .unwrap();
    Some(Backend {
        alloc: Arc::new(alloc),
        tasks: Arc::new(tasks),
        keep: Box::new(()),
    })
}

callsign_storage_conformance::storage_conformance!(postgres);
