#!/usr/bin/env bash
# The desktop app end to end: the real app binary in a WebKitGTK window under Xvfb, driven by
# WebKitWebDriver through tauri-driver, against a real callsign-server on 127.0.0.1.
# Screenshots land in target/desktop-e2e/. Expects ui/dist built (scripts/test.sh does it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
command -v tauri-driver >/dev/null 2>&1 || cargo install tauri-driver --locked
cargo build --locked -p callsign-desktop -p callsign-server -p callsign-cli
(cd tests/desktop && npm ci --no-audit --no-fund)
cd tests/desktop
timeout 600 xvfb-run -a -s "-screen 0 1280x800x24" npm test
