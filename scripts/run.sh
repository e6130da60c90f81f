#!/usr/bin/env bash
# Builds the UI and the app, starts a local Callsign server on the embedded default (SQLite,
# 127.0.0.1:8750) with a dev account created on first run and remembered, points the app and
# the `callsign` CLI (same data dir) at it, and opens the app. Closing the app stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh

DEV_HOME="${CALLSIGN_DEV_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/callsign-dev}"
SERVER_DIR="$DEV_HOME/server"
export CALLSIGN_DATA_DIR="${CALLSIGN_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/callsign}"
LISTEN="${CALLSIGN_LISTEN:-127.0.0.1:8750}"
mkdir -p "$SERVER_DIR"
chmod 700 "$DEV_HOME"

(cd ui && npm ci --no-audit --no-fund && npm run build)
cargo build -p callsign-server -p callsign-cli -p callsign-desktop
BIN=target/debug

ACCOUNT="$DEV_HOME/dev-account.json"
if [ ! -s "$ACCOUNT" ]; then
  (umask 077; "$BIN/callsign-server" account create --data-dir "$SERVER_DIR" --name dev --prefix DEV >"$ACCOUNT")
  echo "run: created dev account (project DEV) in $SERVER_DIR"
fi
TOKEN=$(sed -E 's/.*"token":"([^"]+)".*/\1/' "$ACCOUNT")

"$BIN/callsign-server" serve --data-dir "$SERVER_DIR" --listen "$LISTEN" &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 100); do curl -fsS "http://$LISTEN/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

printf '%s\n' "$TOKEN" | "$BIN/callsign" login --server "http://$LISTEN" --token-stdin --device "$(hostname)" >/dev/null
echo "run: server on http://$LISTEN; app and CLI share $CALLSIGN_DATA_DIR"
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "run: no display; starting the app under Xvfb"
  xvfb-run -a -s "-screen 0 1280x800x24" "$BIN/callsign-desktop"
else
  "$BIN/callsign-desktop"
fi
