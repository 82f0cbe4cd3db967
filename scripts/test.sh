#!/usr/bin/env bash
# Runs the whole Supercode Tray test suite, unattended:
#
#   scripts/test.sh
#
#   1. scripts/install-deps.sh --test          system packages, tauri-driver (fast when warm)
#   2. npm ci + npm run build in ui/           the app embeds ui/dist at compile time
#   3. inside scripts/test-env.sh (Xvfb, private D-Bus, unlocked throwaway keyring):
#        cargo fmt --all --check
#        cargo clippy --workspace --all-targets -- -D warnings
#        cargo test --workspace --no-fail-fast
#        npm --prefix ui run check
#        npm --prefix ui run test:browser
#        node tests/e2e/run.mjs against MiniBrowser (the harness's self-test)
#        cargo build (the app binary, canon-test-server) + node tests/e2e/run.mjs
#
# Steps 1-2 are prerequisites: if one fails the run stops. The checks in step 3 all run even
# when an earlier one fails, so one run shows every problem. A summary with each phase's result
# and duration closes the output; the exit status is non-zero if anything failed.
# Logs and screenshots go to test-artifacts/ (CI collects that folder).
# Functions called only from traps or through run_phase are reachable, whatever shellcheck infers.
# shellcheck disable=SC2317
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

# Nothing here may wait for input (CI has stdin closed; a prompt would hang until the timeout).
exec </dev/null

ARTIFACTS="$REPO_ROOT/test-artifacts"
rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS/phases"
export SUPERCODE_TEST_ARTIFACTS="$ARTIFACTS"
# npm's update and funding notices are noise in a test log.
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
if [ "${CI:-}" = "true" ]; then
  # A CI build is from scratch and thrown away: incremental artifacts only cost time and disk.
  export CARGO_INCREMENTAL=0
fi
TEST_ENV=("$REPO_ROOT/scripts/test-env.sh")

suite_started=$SECONDS
phase_names=()
phase_results=()
phase_secs=()
phase_logs=()
# How much of a failed phase's output the summary repeats.
FAILED_PHASE_LINES=15

# run_phase NAME CMD...: runs CMD, records PASS/FAIL and its duration; returns CMD's status.
run_phase() {
  local name="$1"
  shift
  local started=$SECONDS status
  printf '\n==> [%s] %s\n' "$(date -u +%H:%M:%S)" "$name"
  # Each phase's output is also kept, so the summary can show why a phase failed: CI shows only
  # the end of a long run's output.
  local log
  log="$ARTIFACTS/phases/$(printf '%02d' "${#phase_names[@]}")-$(printf '%s' "$name" | tr -c 'A-Za-z0-9' '-').log"
  set +e
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  set -e
  local secs=$((SECONDS - started))
  phase_names+=("$name")
  phase_secs+=("$secs")
  phase_logs+=("$log")
  if [ "$status" -eq 0 ]; then
    phase_results+=("PASS")
    printf '<== %s: PASS (%ss)\n' "$name" "$secs"
  else
    phase_results+=("FAIL")
    printf '<== %s: FAIL, exit %s (%ss)\n' "$name" "$status" "$secs"
  fi
  printf '%s\t%s\t%ss\n' "$name" "${phase_results[-1]}" "$secs" >>"$ARTIFACTS/timings.tsv"
  return "$status"
}

# cargo test's own closing lines stream as usual; the log is kept to total them up below.
cargo_test() {
  "${TEST_ENV[@]}" cargo test --workspace --no-fail-fast 2>&1 | tee "$ARTIFACTS/cargo-test.log"
  return "${PIPESTATUS[0]}"
}

# The harness against WebKitGTK's MiniBrowser: when e2e fails, this says whether the harness
# and the WebDriver stack work without the app.
e2e_selftest() {
  local mini
  mini="$(find /usr/lib -path '*/webkit2gtk-4.1/MiniBrowser' -type f 2>/dev/null | head -n 1)"
  [ -n "$mini" ] || { echo "MiniBrowser (libwebkit2gtk-4.1-0) not found"; return 1; }
  "${TEST_ENV[@]}" node tests/e2e/run.mjs --app "$mini" tests/e2e/selftest/harness.selftest.mjs tests/e2e/selftest/notification-server.selftest.mjs
}

e2e() {
  # --workspace --bins --tests, not --bin supercode-tray: it resolves features exactly as
  # `cargo test --workspace` did (dev-dependencies such as tauri's "test" feature included), so
  # the app binary links against the crates that phase compiled instead of rebuilding tauri.
  # canon-local/test-server builds canon-test-server, the fake Canon the approval e2e test runs
  # (the dev-dependencies already enable that feature, so this adds the binary, not a rebuild).
  cargo build --workspace --bins --tests --features canon-local/test-server || return
  "${TEST_ENV[@]}" node tests/e2e/run.mjs 2>&1 | tee "$ARTIFACTS/e2e.log"
  return "${PIPESTATUS[0]}"
}

summary() {
  local total=$((SECONDS - suite_started)) i failed=0
  printf '\n================ Supercode Tray test summary ================\n'
  for i in "${!phase_names[@]}"; do
    printf '  %-4s  %6ss  %s\n' "${phase_results[$i]}" "${phase_secs[$i]}" "${phase_names[$i]}"
    [ "${phase_results[$i]}" = "PASS" ] || failed=$((failed + 1))
  done
  if [ -f "$ARTIFACTS/cargo-test.log" ]; then
    # Sum "test result: ok. 12 passed; 0 failed; 1 ignored; ..." over every test binary.
    sed 's/\x1b\[[0-9;]*m//g' "$ARTIFACTS/cargo-test.log" | awk '
      /^test result: / {
        bins++
        for (i = 1; i <= NF; i++) {
          if ($(i+1) ~ /^passed;?$/) p += $i
          if ($(i+1) ~ /^failed;?$/) f += $i
          if ($(i+1) ~ /^ignored;?$/) g += $i
        }
      }
      END { printf "  cargo test: %d passed; %d failed; %d ignored (%d test binaries)\n", p, f, g, bins }'
  fi
  if [ -f "$ARTIFACTS/e2e.log" ]; then
    printf '  e2e: %s\n' "$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$ARTIFACTS/e2e.log" | tail -n 1 || true)"
  fi
  printf '  total: %ss; artifacts: %s\n' "$total" "$ARTIFACTS"
  # Why each failed phase failed, in its own last lines (colours stripped).
  for i in "${!phase_names[@]}"; do
    [ "${phase_results[$i]}" = "PASS" ] && continue
    printf -- '--- the end of "%s" (whole: %s):\n' "${phase_names[$i]}" "${phase_logs[$i]}"
    sed 's/\x1b\[[0-9;]*m//g' "${phase_logs[$i]}" | tail -n "$FAILED_PHASE_LINES" | sed 's/^/    /'
  done
  if [ "$failed" -eq 0 ]; then
    printf 'RESULT: PASS (%s phases)\n' "${#phase_names[@]}"
  else
    printf 'RESULT: FAIL (%s of %s phases failed)\n' "$failed" "${#phase_names[@]}"
  fi
  return "$failed"
}

finish() {
  if summary; then exit 0; else exit 1; fi
}

# --- prerequisites: stop at the first failure --------------------------------------------
run_phase "install dependencies" scripts/install-deps.sh --test || finish
run_phase "ui: npm ci" npm --prefix ui ci --no-audit --no-fund || finish
run_phase "ui: npm run build" npm --prefix ui run build || finish

# --- checks: all run ---------------------------------------------------------------------
# clippy before test: they cannot share compiled crates (check vs. full build), but build
# scripts and proc macros are shared, and clippy's errors come sooner.
run_phase "cargo fmt --check" "${TEST_ENV[@]}" cargo fmt --all --check || true
run_phase "cargo clippy" "${TEST_ENV[@]}" cargo clippy --workspace --all-targets -- -D warnings || true
run_phase "cargo test" cargo_test || true
run_phase "ui: check" "${TEST_ENV[@]}" npm --prefix ui run check || true
run_phase "ui: browser tests" "${TEST_ENV[@]}" npm --prefix ui run test:browser || true
run_phase "e2e harness self-test" e2e_selftest || true
run_phase "e2e (tauri-driver)" e2e || true
run_phase "package: .deb installs, launches, uninstalls" "${TEST_ENV[@]}" scripts/package-check.sh || true
# A short, seeded fuzz run of every parser (15 s each); long runs are in docs/fuzzing.md.
run_phase "fuzz (15 s per target)" "${TEST_ENV[@]}" fuzz/run.sh 15 || true

finish
