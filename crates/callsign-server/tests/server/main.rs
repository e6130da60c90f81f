//! The server's integration tests: route tests through `router(state)` (no socket) and
//! end-to-end tests against the real `callsign-server` binary on 127.0.0.1:0.
//!
//! `routes.rs` and the other route tests drive `router(state)` with `oneshot`;
//! `concurrency.rs`, `batch.rs` and `crash.rs` run the real binary (`crash.rs` only with
//! `--features fault-injection`, which the test command enables); `nodes.rs` runs three real
//! nodes on one PostgreSQL (5,000 creates from 64 clients get exactly 1..5000; one key sent to
//! two nodes at once gets one number; a reader tailing the feed while three nodes write misses
//! nothing). PostgreSQL comes from `callsign_pgtest::shared()`, a schema per test: those tests
//! are skipped without it, except under CI (`CI=true`), where they fail. The storage
//! conformance suite runs in each backend crate's own tests, not here.
mod alike;
mod batch;
mod coalesce;
mod common;
mod concurrency;
#[cfg(feature = "fault-injection")]
mod crash;
mod growth;
mod hardening;
mod held;
mod imports;
mod limits;
mod members;
mod memory;
mod nodes;
mod renames;
mod replicas;
mod routes;
mod startup;
mod window;
