#!/usr/bin/env bash
# Starts a local Callsign server on the embedded default (SQLite, 127.0.0.1:8750) with a dev
# account created on first run and remembered, and points the `callsign` CLI at it.
# Ctrl+C stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh

HOME_DIR="${CALLSIGN_DEV_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/callsign-dev}"
SERVER_DIR="$HOME_DIR/server"
CLIENT_DIR="${CALLSIGN_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/callsign}"
LISTEN="${CALLSIGN_LISTEN:-127.0.0.1:8750}"
mkdir -p "$SERVER_DIR"
chmod 700 "$HOME_DIR"

cargo build --workspace --bins
BIN=target/debug

ACCOUNT="$HOME_DIR/dev-account.json"
if [ ! -s "$ACCOUNT" ]; then
  (umask 077; "$BIN/callsign-server" account create --data-dir "$SERVER_DIR" --name dev --prefix DEV >"$ACCOUNT")
  echo "run: created dev account (project DEV) in $SERVER_DIR"
fi
TOKEN=$(sed -E 's/.*"token":"([^"]+)".*/\1/' "$ACCOUNT")

"$BIN/callsign-server" serve --data-dir "$SERVER_DIR" --listen "$LISTEN" &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null' EXIT INT TERM
for _ in $(seq 50); do curl -fsS "http://$LISTEN/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

if [ -x "$BIN/callsign" ]; then
  "$BIN/callsign" --data-dir "$CLIENT_DIR" login --server "http://$LISTEN" --token "$TOKEN" --device "$(hostname)" >/dev/null
  echo "run: the callsign CLI ($BIN/callsign, data dir $CLIENT_DIR) is logged in to http://$LISTEN"
fi
echo "run: server on http://$LISTEN (Ctrl+C stops it)"
wait $SERVER_PID
