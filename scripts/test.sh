#!/usr/bin/env bash
# Every test of the project: format check, clippy with -D warnings, and all tests (unit, route,
# end-to-end against the real server binary, crash recovery with fault injection).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh

export CARGO_TERM_COLOR=never
echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --all-features --locked
