//! A fake server on 127.0.0.1 for the client's distrust tests: each test builds the axum
//! `Router` that misbehaves the way it needs (answers for another task, a feed that never ends,
//! an endless body, a redirect elsewhere), and the real `callsign` CLI talks to it. The server
//! runs on its own thread and runtime and stops when dropped.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::Router;
use callsign_core::dto::{Task, TaskStatus};
use serde_json::{json, Value};
use uuid::Uuid;

pub struct FakeServer {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    pub fn start(router: Router) -> FakeServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let _ = axum::serve(listener, router)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
        });
        FakeServer {
            url,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A request counter a router's handlers share with the test.
#[derive(Clone, Default)]
pub struct Hits(Arc<AtomicUsize>);

impl Hits {
    pub fn hit(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// `GET /v1/projects` of an account with the one project `SYN`.
pub fn projects() -> Value {
    json!({"projects": [{"id": 1, "name": "Synapse", "prefix": "SYN"}]})
}

/// A task as the server reports it.
pub fn task(uuid: Uuid, number: Option<u64>, description: &str) -> Task {
    let now = chrono::Utc::now();
    Task {
        uuid,
        key: number.map(|n| format!("SYN-{n}")),
        project: "SYN".into(),
        number,
        description: description.into(),
        notes: String::new(),
        status: TaskStatus::Pending,
        tags: vec![],
        due: None,
        priority: None,
        parent: None,
        previous_keys: vec![],
        conflicts: vec![],
        created_by: None,
        assignee: None,
        created_at: now,
        modified_at: now,
        origin: None,
        commits: vec![],
    }
}

/// An empty, final page of the change feed.
pub fn empty_page(cursor: &str) -> Value {
    json!({"changes": [], "cursor": cursor, "has_more": false})
}
