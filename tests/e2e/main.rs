//! End-to-end tests: the real `callsign-server` binary on 127.0.0.1, the real `callsign` CLI, and
//! the sync engine in-process. Each scenario owns its temp dirs and processes and cleans up on
//! drop; every wait is bounded.
//!
//! `cargo test -p callsign-e2e` needs the binaries built first (the workspace test run builds
//! them; alone: `cargo build -p callsign-server --features fault-injection -p callsign-cli`).
//! The measurements of issue 3 are `#[ignore]`d tests: `cargo test -p callsign-e2e --release
//! -- --ignored --nocapture measure`.
//!
//! The test command runs this binary twice, the second time with
//! `CALLSIGN_E2E_DATABASE=postgres` (`fixture.rs`) and without the fault campaign, so every
//! server it starts is on a fresh PostgreSQL schema. The fault campaign's library
//! (`tests/chaos`: seeded fault proxy, process control, campaign runner with devices of several
//! team members, checker of G1-G5 and of each task's `created_by`) runs here in short and in
//! the `chaos` tool for long runs (docs/OPERATIONS.md).
mod alike;
mod chaos;
mod cli;
mod crash;
mod devices;
mod distrust;
mod edits;
mod engine_loop;
mod failover;
mod fake;
mod fields;
mod fixture;
mod git;
mod grammar;
mod hardening;
mod imports;
mod local;
mod measure;
mod moves;
mod offline;
mod proxy;
mod reconnect;
mod refusal;
mod renames;
mod reports;
mod restore;
mod server_crash;
mod subtasks;
mod task3;
mod taskwarrior;
mod team;
mod undo;
