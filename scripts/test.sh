#!/usr/bin/env bash
# Every test of the project: the UI's unit tests and type check, cargo fmt --check, clippy with
# -D warnings, the crate graph and import circles (scripts/check-layers.py), all Rust tests (unit, route, the storage conformance suite on SQLite and
# PostgreSQL, end-to-end against the real server binary, crash recovery with fault injection,
# three server nodes on one PostgreSQL, the client engine and CLI end to end on either backend,
# the desktop commands on Tauri's mock runtime, `task sync` of the real Taskwarrior 3.5 when
# scripts/taskwarrior3.sh can fetch it), schema-based fuzzing of the HTTP API against the real
# server, the desktop app end to end in a real WebKit window, then the Debian packages of the
# server, the CLI and the desktop app (built, and installed into a temp root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
export CARGO_TERM_COLOR=never
# One build, never an edit-and-rebuild loop: incremental state would only take disk (several
# GB across the workspace's test targets) and time.
export CARGO_INCREMENTAL=0
# Each stage is announced with the seconds this run has taken so far (where CI time goes).
stage() { echo "== [${SECONDS} s] $*"; }

stage "ui: npm ci, check, unit tests, build (the app embeds ui/dist)"
(cd ui && npm ci --no-audit --no-fund && npm run check && npm test && npm run build)

stage "cargo fmt --check"
cargo fmt --all --check
stage "cargo clippy"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings
stage "the workspace's shape: crates depend one way, no import circle of over two files"
python3 scripts/check-layers.py --self-test
python3 scripts/check-layers.py
stage "Taskwarrior 3.5 for the real-Taskwarrior test (tests/e2e/task3.rs)"
# Fetched from Debian sid when it can be; without it that one test is skipped, not failed.
task3_log="$(mktemp)"
if task3="$(bash scripts/taskwarrior3.sh 2>"$task3_log")"; then
    cat "$task3_log" >&2
    export CALLSIGN_TASK3="$task3"
else
    cat "$task3_log" >&2
    echo "== the real-Taskwarrior test will be skipped: $(tail -n 1 "$task3_log")"
fi
rm -f "$task3_log"
stage "cargo test"
cargo test --workspace --all-features --locked
stage "engine and CLI end to end again, against a PostgreSQL-backed server"
# The same scenarios, unchanged; each server on a fresh schema of a throwaway cluster. The
# fault campaign is left out here: it has a three-node PostgreSQL run of its own above.
CALLSIGN_E2E_DATABASE=postgres cargo test --workspace --all-features --locked --test e2e -- --skip chaos

stage "API fuzzing: schemathesis against the real server (bounded)"
bash scripts/fuzz-api.sh

stage "desktop end to end"
bash scripts/test-desktop.sh

stage "Debian packages of the server, the CLI and the desktop app: build, then install into a temp root"
bash scripts/package.sh --debug
bash scripts/check-packages.sh
stage "all passed"
