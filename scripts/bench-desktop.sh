#!/usr/bin/env bash
# Benchmark (not a test; not part of scripts/test.sh): the real desktop app over Tauri IPC with
# 50,000 tasks. Seeds a temp data dir through the engine (`callsign import`), launches the app
# BENCH_RUNS times under Xvfb through tauri-driver (local-only: no server configured), and prints
# first list paint, the list_tasks IPC time, time per filter keystroke and idle RSS, beside the
# fake-backend figures from ui/scripts/webkit-smoke.mjs.
#
#   bash scripts/bench-desktop.sh                 # release build (what users run)
#   BENCH_PROFILE=debug bash scripts/bench-desktop.sh
#
# Environment: BENCH_PROFILE (release | debug), BENCH_TASKS (50000), BENCH_RUNS (3),
# BENCH_BASELINE=0 to skip the fake-backend run. Bounded: each step runs under `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
PROFILE=${BENCH_PROFILE:-release}
TASKS=${BENCH_TASKS:-50000}
OUT=target/bench-desktop
mkdir -p "$OUT"

command -v tauri-driver >/dev/null 2>&1 || cargo install tauri-driver --locked
# The app embeds ui/dist at compile time: build it first if the UI sources are newer.
if [ ! -f ui/dist/index.html ] || [ -n "$(find ui/src ui/index.html -newer ui/dist/index.html | head -1)" ]; then
  [ -d ui/node_modules ] || (cd ui && npm ci --no-audit --no-fund)
  (cd ui && npm run build)
fi
case "$PROFILE" in
  release) cargo build --release -p callsign-desktop ;;
  debug) cargo build -p callsign-desktop ;;
  *) echo "BENCH_PROFILE must be release or debug" >&2; exit 2 ;;
esac
cargo build -p callsign-cli
[ -d tests/desktop/node_modules ] || (cd tests/desktop && npm ci --no-audit --no-fund)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/callsign-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# The fake backend's data shape (ui/src/dev/fake-backend.ts seed): same words, projects OPS and
# SYN. Imported tasks are all pending and provisional (there is no server to number them).
node -e '
  const words = ["Fix", "Write", "Review", "Deploy", "Plan", "Rotate", "Update", "Check"];
  const things = ["login page", "release notes", "sync engine", "backups", "keys", "docs", "CI", "metrics"];
  const n = Number(process.argv[1]);
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(JSON.stringify({
      description: `${words[i % words.length]} ${things[(i * 7) % things.length]} ${i + 1}`,
      project: i % 4 === 0 ? "OPS" : "SYN",
      tags: i % 5 === 0 ? ["ops"] : [],
    }));
  }
  process.stdout.write(out.join("\n") + "\n");
' "$TASKS" > "$TMP/tasks.jsonl"
start=$(date +%s%N)
target/debug/callsign --data-dir "$TMP/data" import --jsonl < "$TMP/tasks.jsonl"
echo "seeded $TASKS tasks in $(( ($(date +%s%N) - start) / 1000000 )) ms (callsign import, debug build)"

BASELINE_FILE=""
if [ "${BENCH_BASELINE:-1}" != 0 ]; then
  echo "fake-backend baseline (ui/scripts/webkit-smoke.mjs, perf part only)..."
  (cd ui && npm run --silent build:preview >/dev/null)
  if SMOKE_ONLY=perf SHOTS="$PWD/$OUT/ui-smoke" timeout 300 \
      xvfb-run -a -s "-screen 0 1280x800x24" node ui/scripts/webkit-smoke.mjs > "$OUT/baseline.txt" 2>&1; then
    BASELINE_FILE="$PWD/$OUT/baseline.txt"
  else
    echo "(the fake-backend run failed; see $OUT/baseline.txt; earlier figures are shown instead)"
  fi
fi

cd tests/desktop
BENCH_APP="../../target/$PROFILE/callsign-desktop" BENCH_DATA="$TMP/data" BENCH_BASELINE="$BASELINE_FILE" \
  timeout 900 xvfb-run -a -s "-screen 0 1280x800x24" npm run --silent bench | tee "../../$OUT/result-$PROFILE.txt"
