#!/usr/bin/env bash
# `supercode-tray list --json` at 10 / 100 / 1,000 / 10,000 receipts, with no tray app running,
# beside the floor of that reading (the inventory bench's `--once floor`: read and parse every
# file, read each pid's /proc/<pid>/stat), taking turns in rounds of hyperfine runs (docs/BENCHMARKS.md,
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
# SUPERCODE_BENCH_ROUNDS: how many rounds of five runs each command gets (default 6).
rounds=${SUPERCODE_BENCH_ROUNDS:-6}
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
  # The commands take turns in short rounds, so a change in the machine's load between one
  # command's runs and the next's shows in every command alike.
  for round in $(seq "$rounds"); do
    hyperfine -N --warmup 1 --runs 5 "${commands[@]}" --export-json "$d.round$round.json" >/dev/null
  done
  python3 - "$d".round*.json <<'PY'
import json, statistics, sys
rounds = [json.load(open(path))["results"] for path in sys.argv[1:]]
names = [r["command"] for r in rounds[0]]
times = {name: [t * 1000 for round in rounds for r in round if r["command"] == name for t in r["times"]] for name in names}
floor = statistics.median(times["floor"])
for name in names:
    t = sorted(times[name])
    per_round = sorted(statistics.median(next(r["times"] for r in round if r["command"] == name))
                       / statistics.median(next(r["times"] for r in round if r["command"] == "floor")) for round in rounds)
    print(f"  {name}: median {statistics.median(t):.1f} ms, p90 {t[int(len(t) * 0.9) - 1]:.1f} ms, "
          f"max {t[-1]:.1f} ms, {statistics.median(t) / floor:.2f}x the floor "
          f"({per_round[0]:.2f}-{per_round[-1]:.2f}x in the {len(rounds)} rounds)")
PY
  xargs kill <"$d/sleepers" 2>/dev/null || true
  rm -rf "$d" "$d".round*.json
done
