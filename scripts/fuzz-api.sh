#!/usr/bin/env bash
# Schema-based fuzzing of the HTTP API: schemathesis (pinned, from PyPI, in a venv under target/)
# generates requests from the server's own /openapi.json and sends them to the real
# callsign-server on 127.0.0.1 with a fresh data dir. Bounded: a fixed example count per
# operation, a time budget, a fixed seed. Passes only with 0 server errors and 0 answers that
# break the schema (status codes, content types, headers, bodies). `positive_data_acceptance` is
# left out: the schema cannot say which projects exist, so a schema-valid create may be a 404.
set -euo pipefail
cd "$(dirname "$0")/.."
SCHEMATHESIS_VERSION=4.32.5
venv=target/schemathesis-venv
if ! grep -q "$SCHEMATHESIS_VERSION" <<<"$("$venv/bin/schemathesis" --version 2>/dev/null)"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
cargo build --locked -q -p callsign-server --features fault-injection
server=target/debug/callsign-server
data=$(mktemp -d)
out=$(mktemp)
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; rm -rf "$data" "$out"; }
trap cleanup EXIT
token=$("$server" account create --data-dir "$data" --name Fuzz --prefix FUZ |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
"$server" serve --data-dir "$data" --listen 127.0.0.1:0 >"$out" 2>/dev/null &
pid=$!
for _ in $(seq 100); do grep -q listening "$out" && break; sleep 0.1; done
url=$(sed -n 's/^callsign-server listening on //p' "$out")
[ -n "$url" ] || { echo "fuzz: the server did not start" >&2; exit 1; }
# One task in the feed, so `GET /v1/changes?wait=S` answers at once instead of holding each
# example for up to a minute (longer than schemathesis waits for an answer); holding itself is
# tested in crates/callsign-server/tests/server/held.rs.
python3 - "$url" "$token" <<'PY'
import json, sys, urllib.request, uuid
url, token = sys.argv[1], sys.argv[2]
req = urllib.request.Request(
    f"{url}/v1/tasks/{uuid.uuid4()}", method="PUT",
    data=json.dumps({"project": "FUZ", "description": "seed"}).encode(),
    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
             "Idempotency-Key": "fuzz-seed-task"})
urllib.request.urlopen(req, timeout=10).read()
PY
echo "fuzz: schemathesis $SCHEMATHESIS_VERSION against $url"
timeout 600 "$venv/bin/schemathesis" run "$url/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks all --exclude-checks positive_data_acceptance \
  --max-examples "${FUZZ_EXAMPLES:-100}" --max-time 120 --seed 20261125 \
  --no-color --warnings off
