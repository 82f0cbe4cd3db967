#!/usr/bin/env bash
# `supercode-tray list --json` at 10 / 100 / 1,000 / 10,000 receipts, with no tray app running,
# beside the floor of that reading (the inventory bench's `--once floor`: read and parse every
# file, read each pid's /proc/<pid>/stat), one hyperfine run per size (docs/BENCHMARKS.md,
# "Inventory scale"):
#
#   scripts/bench-list.sh [SIZE...]
#
# Needs the release command (`cargo build --release --bin supercode-tray`) and hyperfine, and
# writes its receipt mixes (70 % live, each naming a `sleep` of its own, 20 % dead, 10 % corrupt)
# under /tmp/supercode-bench-list.N, removed at the end with their sleepers.
set -euo pipefail
cd "$(dirname "$0")/.."

# SUPERCODE_BENCH_BIN_DIR: the supercode-tray to time (default: this checkout's release build).
# SUPERCODE_BENCH_BEFORE_DIR: another commit's, timed in the same runs, taking turns with it.
release=${SUPERCODE_BENCH_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
before=${SUPERCODE_BENCH_BEFORE_DIR:-}
bench=$(cargo bench -p benchmarks --bench inventory --no-run 2>&1 | sed -n 's/.*(\(.*inventory-[^)]*\))$/\1/p')
[ -x "$bench" ] || { echo "bench-list: the inventory bench did not build" >&2; exit 1; }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 100 1000 10000)

for n in "${sizes[@]}"; do
  d=/tmp/supercode-bench-list.$n
  rm -rf "$d"
  "$bench" --populate "$d" "$n" >/dev/null
  mkdir -p -m 0700 "$d/canon" "$d/state" "$d/logs"
  export SUPERCODE_RUNTIME_DIR=$d/receipts SUPERCODE_SECRET_STORE=file SUPERCODE_SECRET_DIR=$d/secrets \
    CANON_HOME=$d/canon SUPERCODE_STATE_DIR=$d/state SUPERCODE_LOG_DIR=$d/logs
  # A first list removes the dead receipts: every timed run then sees the steady state.
  "$release/supercode-tray" list --json >/dev/null
  echo "== $n receipts written ($(ls "$d/receipts" | wc -l) files)"
  commands=(-n "list --json" "$release/supercode-tray list --json")
  [ -z "$before" ] || commands+=(-n "list --json (before)" "$before/supercode-tray list --json")
  commands+=(-n "floor" "$bench --once floor $d")
  hyperfine -N --warmup 3 --runs 20 "${commands[@]}" --export-markdown "$d.md" --export-json "$d.json"
  cat "$d.md"
  python3 - "$d.json" <<'PY'
import json, statistics, sys
results = json.load(open(sys.argv[1]))["results"]
floor = statistics.median(results[-1]["times"])
for r in results:
    t = sorted(x * 1000 for x in r["times"])
    print(f"  {r['command']}: median {statistics.median(t):.1f} ms, p90 {t[int(len(t) * 0.9) - 1]:.1f} ms, "
          f"max {t[-1]:.1f} ms, {statistics.median(r['times']) / floor:.2f}x the floor")
PY
  xargs kill <"$d/sleepers" 2>/dev/null || true
  rm -rf "$d"
done
