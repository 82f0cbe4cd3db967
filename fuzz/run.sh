#!/usr/bin/env bash
# CI fuzz run: every target for SECONDS seconds each (default 20), on stable Rust, reproducible
# (fixed seed unless FUZZ_SEED is set). Exits non-zero on the first failing target; the minimal
# failing input is then under fuzz/artifacts/<target>/. Long runs: see docs/fuzzing.md.
set -euo pipefail
seconds="${1:-20}"
seed="${FUZZ_SEED:-1}"
here="$(cd "$(dirname "$0")" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
cargo build --release --locked --manifest-path "$here/Cargo.toml" --bin fuzz
cargo test --release --locked --manifest-path "$here/Cargo.toml" --lib
status=0
for target in receipt canon_agents canon_pending canon_catalog canon_lock; do
  # A hang is a failure too: allow the run plus a generous margin for corpus replay and shrinking.
  if ! timeout "$((seconds + 120))" "$CARGO_TARGET_DIR/release/fuzz" "$target" --seconds "$seconds" --seed "$seed"; then
    echo "fuzz: $target FAILED" >&2
    status=1
  fi
done
exit "$status"
