#!/usr/bin/env bash
# Runs Supercode Tray on a Debian/Ubuntu desktop, installing what is missing:
#
#   scripts/run.sh
#
# Installs build/run dependencies (scripts/install-deps.sh), builds the UI and the app (a debug
# build: it compiles in a fraction of a release build's time, which with LTO takes several
# minutes on a laptop), starts two demo runtimes (demo-alpha, demo-beta) in the background so
# the tray has something to show (stop one, e.g. with kill -9, and revive it from the tray), then
# runs the tray app in the foreground. When the app exits (or on Ctrl-C) the demo runtimes are
# stopped, those revived from the tray included, before their folders are removed. The UI is
# rebuilt only when a file under ui/ is newer than ui/dist.
# Functions called only from traps or through run_phase are reachable, whatever shellcheck infers.
# shellcheck disable=SC2317
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

# A demo runtime prints one line when it is up; compiling is done by then, so this only covers
# a slow start on a busy machine.
DEMO_READY_TIMEOUT_SECS=30
# How long a demo runtime gets to remove its receipt and exit after SIGTERM before SIGKILL.
DEMO_STOP_TIMEOUT_SECS=10
# How often the demo runtimes' output is re-checked while waiting for them to come up.
POLL_INTERVAL_SECS=0.2

log() { printf 'run: %s\n' "$*"; }
die() { printf 'run: error: %s\n' "$*" >&2; exit 1; }

# Check the display first: there is no point installing and compiling for minutes otherwise.
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  die "no graphical display (neither DISPLAY nor WAYLAND_DISPLAY is set).
  Supercode Tray is a desktop tray app: run this from a terminal inside your desktop session.
  (To run the tests headless instead: scripts/test.sh)"
fi

scripts/install-deps.sh

# ui_stale: true when ui/dist is missing or a UI source (or the lockfile) is newer than its
# index.html, which every build writes.
ui_stale() {
  [ -f ui/dist/index.html ] || return 0
  [ -n "$(find ui \( -path ui/node_modules -o -path ui/dist \) -prune -o -type f -newer ui/dist/index.html -print -quit)" ]
}
if ui_stale; then
  log "building the UI (ui/dist)"
  if [ ! -f ui/node_modules/.package-lock.json ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
    npm --prefix ui ci --no-audit --no-fund
  fi
  npm --prefix ui run build
else
  log "the UI (ui/dist) is up to date"
fi

log "building the app (debug build)"
# supercode-tray starts the tray by exec'ing supercode-tray-app beside it, and agents' hooks run
# supercode-tray-hook beside it: build all three.
cargo build --bins
target_dir="$(cargo metadata --format-version 1 --no-deps | node -e \
  'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')"
app="$target_dir/debug/supercode-tray"
[ -x "$app" ] && [ -x "$app-app" ] && [ -x "$app-hook" ] ||
  die "the build succeeded but $app, $app-app or $app-hook is missing"

# Demo runtimes' workspaces and output live in a private folder: their output names their
# endpoint, which is not for the terminal.
run_dir="$(mktemp -d "${TMPDIR:-/tmp}/supercode-run.XXXXXX")"
chmod 0700 "$run_dir"
demo_pids=()
app_pid=""

# The demo runtimes behave like @canonmsg/core runtimes (a profile lock and a catalog entry, which
# is what makes a stopped one revivable). They and the tray use a private CANON_HOME seeded with two
# demo profiles, so the demo never touches the user's ~/.canon; the demo keys are not real keys.
export CANON_HOME="$run_dir/canon"
mkdir -p "$CANON_HOME"
chmod 0700 "$CANON_HOME"
cat >"$CANON_HOME/agents.json" <<'JSON'
{
  "demo-alpha": {
    "apiKey": "demo-key-not-a-secret-alpha",
    "agentId": "demo-alpha",
    "agentName": "demo-alpha",
    "registeredAt": "2026-01-01T00:00:00.000Z",
    "clientType": "claude-code"
  },
  "demo-beta": {
    "apiKey": "demo-key-not-a-secret-beta",
    "agentId": "demo-beta",
    "agentName": "demo-beta",
    "registeredAt": "2026-01-01T00:00:00.000Z",
    "clientType": "codex"
  }
}
JSON
chmod 0600 "$CANON_HOME/agents.json"

# stop_processes PID...: TERM, then KILL whatever is still there after DEMO_STOP_TIMEOUT_SECS.
stop_processes() {
  local pid deadline
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  deadline=$((SECONDS + DEMO_STOP_TIMEOUT_SECS))
  for pid in "$@"; do
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep "$POLL_INTERVAL_SECS"; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
# demo_processes: the pids of every demo runtime still running, those this script started and
# those revived from the tray since (the app starts those, not this script): a process of the
# app's binary whose working directory is a demo workspace (a revive runs in the recorded one).
demo_processes() {
  local proc pid exe cwd
  for proc in /proc/[0-9]*; do
    pid="${proc#/proc/}"
    exe="$(readlink "$proc/exe" 2>/dev/null)" || continue
    # " (deleted)": the binary was rebuilt while the demo ran.
    case "$exe" in "$app" | "$app-app" | "$app (deleted)" | "$app-app (deleted)") ;; *) continue ;; esac
    cwd="$(readlink "$proc/cwd" 2>/dev/null)" || continue
    case "$cwd" in "$run_dir/workspaces/"*) printf '%s\n' "$pid" ;; esac
  done
}
cleanup() {
  local status=$?
  local running=()
  if [ -n "$app_pid" ]; then stop_processes "$app_pid"; fi
  # Before their folders go: a runtime whose workspace is deleted under it keeps running.
  mapfile -t running < <(demo_processes)
  running+=("${demo_pids[@]}")
  if [ "${#running[@]}" -gt 0 ]; then
    log "stopping the demo runtimes"
    stop_processes "${running[@]}"
  fi
  rm -rf "$run_dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_demo NAME [DEMO-RUNTIME ARGS...]
start_demo() {
  local name="$1" workspace="$run_dir/workspaces/$1" out="$run_dir/$1.out" pid deadline
  shift
  mkdir -p "$workspace"
  "$app" demo-runtime --name "$name" --workspace "$workspace" --canon-profile "$name" "$@" >"$out" 2>"$run_dir/$name.err" </dev/null &
  pid=$!
  demo_pids+=("$pid")
  deadline=$((SECONDS + DEMO_READY_TIMEOUT_SECS))
  until [ -s "$out" ]; do
    kill -0 "$pid" 2>/dev/null ||
      die "demo runtime $name exited during start-up; its error output:
$(tail -n 20 "$run_dir/$name.err")"
    [ "$SECONDS" -lt "$deadline" ] || die "demo runtime $name did not come up within ${DEMO_READY_TIMEOUT_SECS}s"
    sleep "$POLL_INTERVAL_SECS"
  done
  log "demo runtime $name is up (pid $pid)"
}

# demo-alpha walks the approval scenario (docs/runtime-api.md): working, then after about a
# second it needs your approval; approve it from the tray menu or the window and it goes on.
start_demo demo-alpha --scenario approval
start_demo demo-beta

log "starting Supercode Tray (quit it from the tray menu, or press Ctrl-C here)"
# In the background and waited for, so that Ctrl-C or a TERM to this script is handled at once
# (bash runs traps only after a foreground child exits); cleanup then stops the app too.
"$app" <&0 &
app_pid=$!
set +e
wait "$app_pid"
status=$?
set -e
app_pid=""
log "Supercode Tray exited ($status)"
exit "$status"
