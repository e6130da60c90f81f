//! The storage conformance suite (`callsign-storage-conformance`) on a fresh SQLite data dir,
//! opened as the server opens it.
use std::sync::Arc;

use callsign_storage_conformance::Backend;

async fn sqlite() -> Option<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let opened = callsign_storage_sqlite::open(dir.path(), Default::default()).unwrap();
    Some(Backend {
        alloc: Arc::new(opened.alloc),
        tasks: Arc::new(opened.tasks),
        keep: Box::new(dir),
    })
}

callsign_storage_conformance::storage_conformance!(sqlite);
