//! The fault campaign of issue 5: a seeded fault proxy, the real server and CLI processes,
//! a campaign runner that crashes them, and a checker for DESIGN.md's guarantees G1-G5. The
//! server runs on its embedded SQLite data dir or as several nodes on one PostgreSQL (issue 21).
//! A Taskwarrior replica (TaskChampion's own, issue 23) creates and syncs beside the devices.
//! `cargo run -p callsign-e2e --bin chaos -- --help` runs it by hand; the e2e test binary runs
//! the short campaign and the checker's own tests.
pub mod bins;
pub mod campaign;
pub mod checker;
pub mod device;
pub mod http;
pub mod pgview;
pub mod procs;
pub mod proxy;
pub mod report;
pub mod resolve;
pub mod summary;
pub mod taskwarrior;
pub mod view;
