//! The server's integration tests: route tests through `router(state)` (no socket) and
//! end-to-end tests against the real `callsign-server` binary on 127.0.0.1:0.
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
mod limits;
mod members;
mod memory;
mod nodes;
mod renames;
mod replicas;
mod routes;
mod startup;
mod window;
