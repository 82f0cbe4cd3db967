#!/usr/bin/env bash
# `supercode-tray list --json` at 10 / 100 / 1,000 / 10,000 receipts (issue 16, target 1), three
# ways side by side in one hyperfine run per size: answered by the running tray app, read by the
# command itself (`--scan`), and the floor of that reading (the inventory bench's `--once floor`).
# Run inside a desktop session for the app (docs/BENCHMARKS.md):
#
#   scripts/test-env.sh scripts/bench-list.sh [SIZE...]
#
# Needs the release binaries (`cargo build --release --bins --features tauri/custom-protocol`),
# hyperfine, and writes its receipt mixes (70 % live, each naming a `sleep` of its own, 20 %
# dead, 10 % corrupt) under /tmp/supercode-bench-list.N, removed at the end with their sleepers.
set -euo pipefail
cd "$(dirname "$0")/.."

# SUPERCODE_BENCH_BIN_DIR: the supercode-tray and supercode-tray-app to time (another commit's, say).
release=${SUPERCODE_BENCH_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
bench=$(cargo bench -p live-runtime --bench inventory --no-run 2>&1 | sed -n 's/.*(\(.*inventory-[^)]*\))$/\1/p')
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
  "$release/supercode-tray" list --json --scan >/dev/null
  # No window: a fresh state directory is a first start, which would open it.
  SUPERCODE_TRAY_OPEN_WINDOW=0 "$release/supercode-tray-app" >"$d/app.out" 2>&1 &
  app=$!
  for _ in $(seq 600); do
    [ -S "$d/state/control/socket" ] && break
    sleep 0.1
  done
  # Timed once the app is done starting: every runtime subscribed and shown (at 10,000 mostly
  # not-answering `sleep`s that takes it a minute or two), less than a tenth of a core over 5 s.
  settle_start=$SECONDS
  while :; do
    before=$(awk '{print $14 + $15}' "/proc/$app/stat"); sleep 5
    after=$(awk '{print $14 + $15}' "/proc/$app/stat")
    [ $((after - before)) -lt 50 ] && break
    [ $((SECONDS - settle_start)) -gt 600 ] && { echo "bench-list: the app never settled" >&2; break; }
  done
  echo "   app settled after $((SECONDS - settle_start)) s"
  echo "== $n receipts written ($(ls "$d/receipts" | wc -l) files), app pid $app, app RSS $(awk '/VmRSS/ {print $2, $3}' "/proc/$app/status")"
  # The second command's runs each follow a change (a new unreadable file in the receipt
  # directory): the app must take it in and render its answer anew, not give the one it kept.
  hyperfine -N --warmup 3 --runs 20 \
    --prepare true --prepare "sh -c 'echo junk >$d/receipts/changed-\$\$.json'" --prepare true --prepare true \
    -n "list --json (app answers)" "$release/supercode-tray list --json" \
    -n "list --json (app answers, just after a change)" "$release/supercode-tray list --json" \
    -n "list --json --scan" "$release/supercode-tray list --json --scan" \
    -n "floor" "$bench --once floor $d" \
    --export-markdown "$d.md" --export-json "$d.json"
  cat "$d.md"
  python3 - "$d.json" <<'EOF'
import json, statistics, sys
for r in json.load(open(sys.argv[1]))["results"]:
    t = sorted(x * 1000 for x in r["times"])
    print(f"  {r['command']}: median {statistics.median(t):.1f} ms, p90 {t[int(len(t) * 0.9) - 1]:.1f} ms, max {t[-1]:.1f} ms")
EOF
  answered=$(cat "$d"/logs/* | grep -c "list answered by the running tray app" || true)
  echo "lists the app answered: $answered (hyperfine asked it 46 times)"
  kill "$app"; wait "$app" || true
  xargs kill <"$d/sleepers" 2>/dev/null || true
  rm -rf "$d"
done
