#!/usr/bin/env bash
# Runs a command inside a throwaway desktop session for tests:
#
#   scripts/test-env.sh CMD [ARGS...]
#
# CMD gets
#   - its own Xvfb server (DISPLAY, free display number chosen by Xvfb itself),
#   - a private D-Bus session bus (DBUS_SESSION_BUS_ADDRESS, via dbus-run-session) on which the
#     host's notification daemon is never activated,
#   - a gnome-keyring Secret Service on that bus, unlocked with a throwaway password and
#     checked with a secret-tool store/lookup/clear round trip before CMD starts,
#   - a fresh HOME and XDG_* directories and a private 0700 XDG_RUNTIME_DIR, so the user's real
#     keyring, config and data are never touched,
#   - SUPERCODE_REQUIRE_{KEYCHAIN,BROWSER,NODE,E2E,AGENTS}=1 so gated tests fail instead of
#     skipping (AGENTS: the pinned Claude Code and Codex CLIs and tmux).
# CARGO_HOME, RUSTUP_HOME and npm's cache keep pointing at the caller's, so toolchains and
# caches keep working although HOME changes. Everything is torn down on exit; the exit status
# is CMD's.
#
# Needs: Xvfb, xdpyinfo (x11-utils), dbus-run-session, gnome-keyring-daemon, secret-tool
# (scripts/install-deps.sh --test installs them).
# Functions called only from traps or through run_phase are reachable, whatever shellcheck infers.
# shellcheck disable=SC2317
set -euo pipefail

# Xvfb writes its display number once it accepts connections; a loaded 2-core CI machine that
# is also compiling can take several seconds, so wait generously before giving up.
READY_TIMEOUT_SECS=60
# How long CMD gets to exit after TERM when this script is interrupted, before it is killed.
STOP_TIMEOUT_SECS=10
# How often readiness is re-checked while waiting for the keyring to own its bus name.
POLL_INTERVAL_SECS=0.1
# The keyring is only for tests; the password never protects anything real.
KEYRING_PASSWORD="supercode-test-keyring"
# Bus names the host may have a service for that must never be activated in a test session
# (see the session bus below); tests that need one of them start their own on the bus.
NEVER_ACTIVATED=(org.freedesktop.Notifications)
# Label/attributes of the probe secret used to check that the Secret Service answers.
PROBE_ATTRS=(service supercode-test-env account probe)

die() { printf 'test-env: error: %s\n' "$*" >&2; exit 1; }

if [ "${1:-}" = "__inside_dbus" ]; then
  shift
  inside=1
else
  inside=0
  [ "$#" -gt 0 ] || die "usage: $0 CMD [ARGS...]"
fi

require() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found; run scripts/install-deps.sh --test"
}

# ------------------------------------------------------------------------------------------
# Stage 2 (runs inside dbus-run-session): keyring, then CMD.
# ------------------------------------------------------------------------------------------
if [ "$inside" -eq 1 ]; then
  [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] || die "internal: no session bus inside dbus-run-session"

  keyring_pid=""
  stop_keyring() {
    if [ -n "$keyring_pid" ] && kill -0 "$keyring_pid" 2>/dev/null; then
      kill "$keyring_pid" 2>/dev/null || true
      wait "$keyring_pid" 2>/dev/null || true
    fi
  }
  trap stop_keyring EXIT

  # --foreground keeps it our child (so we know its pid and stop it); --unlock reads the
  # password from stdin and, in a fresh HOME, creates the "login" collection with it and makes
  # it the default collection.
  printf '%s' "$KEYRING_PASSWORD" |
    gnome-keyring-daemon --foreground --unlock --components=secrets \
      >"$XDG_RUNTIME_DIR/gnome-keyring.log" 2>&1 &
  keyring_pid=$!

  has_secrets_owner() {
    local reply
    reply="$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null)" || return 1
    [[ "$reply" == *"boolean true"* ]]
  }
  deadline=$((SECONDS + READY_TIMEOUT_SECS))
  until has_secrets_owner; do
    kill -0 "$keyring_pid" 2>/dev/null ||
      die "gnome-keyring-daemon exited early: $(cat "$XDG_RUNTIME_DIR/gnome-keyring.log")"
    [ "$SECONDS" -lt "$deadline" ] ||
      die "gnome-keyring-daemon did not own org.freedesktop.secrets within ${READY_TIMEOUT_SECS}s"
    sleep "$POLL_INTERVAL_SECS"
  done

  # The default collection must exist and be unlocked, otherwise keychain calls would try to
  # show an unlock prompt on the Xvfb display and hang.
  locked="$(timeout "$READY_TIMEOUT_SECS" dbus-send --session --print-reply \
    --dest=org.freedesktop.secrets /org/freedesktop/secrets/aliases/default \
    org.freedesktop.DBus.Properties.Get \
    string:org.freedesktop.Secret.Collection string:Locked 2>&1)" ||
    die "the Secret Service has no default collection: $locked"
  case "$locked" in
    *"boolean false"*) ;;
    *) die "the default keyring collection is locked: $locked" ;;
  esac
  probe="probe-$$-$RANDOM"
  printf '%s' "$probe" | timeout "$READY_TIMEOUT_SECS" \
    secret-tool store --label='supercode test-env probe' "${PROBE_ATTRS[@]}" ||
    die "secret-tool store failed: the Secret Service does not accept secrets"
  got="$(timeout "$READY_TIMEOUT_SECS" secret-tool lookup "${PROBE_ATTRS[@]}")" ||
    die "secret-tool lookup failed after a successful store"
  [ "$got" = "$probe" ] || die "secret-tool lookup returned a different value than was stored"
  timeout "$READY_TIMEOUT_SECS" secret-tool clear "${PROBE_ATTRS[@]}" ||
    die "secret-tool clear failed"

  export SUPERCODE_REQUIRE_KEYCHAIN=1 SUPERCODE_REQUIRE_BROWSER=1
  export SUPERCODE_REQUIRE_NODE=1 SUPERCODE_REQUIRE_E2E=1 SUPERCODE_REQUIRE_AGENTS=1
  # As root (CI), the tests create a second OS user; skipping them there would hide a failure.
  if [ "$(id -u)" -eq 0 ]; then export SUPERCODE_REQUIRE_OTHER_USER=1; fi
  # Not exec: the keyring must be stopped after CMD, and CMD's status is passed on.
  set +e
  "$@"
  status=$?
  set -e
  exit "$status"
fi

# ------------------------------------------------------------------------------------------
# Stage 1: directories, Xvfb, then stage 2 inside a private D-Bus session.
# ------------------------------------------------------------------------------------------
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
for tool in ps Xvfb xdpyinfo dbus-run-session dbus-send gnome-keyring-daemon secret-tool timeout; do
  require "$tool"
done

# Keep toolchains and caches reachable before HOME moves.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export npm_config_cache="${npm_config_cache:-$HOME/.npm}"
if [ -z "${PYENV_ROOT:-}" ] && [ -d "$HOME/.pyenv" ]; then export PYENV_ROOT="$HOME/.pyenv"; fi

env_dir="$(mktemp -d "${TMPDIR:-/tmp}/supercode-test-env.XXXXXX")"
xvfb_pid=""
session_pid=""
# descendants PID: every process below PID (children first, then theirs).
descendants() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}
cleanup() {
  local status=$?
  if [ -n "$session_pid" ] && kill -0 "$session_pid" 2>/dev/null; then
    # Stop CMD, the bus and the keyring together: the whole tree under dbus-run-session.
    # shellcheck disable=SC2046 # word splitting of the pid list is intended
    kill -TERM "$session_pid" $(descendants "$session_pid") 2>/dev/null || true
    local deadline=$((SECONDS + STOP_TIMEOUT_SECS))
    while kill -0 "$session_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
      sleep "$POLL_INTERVAL_SECS"
    done
    # shellcheck disable=SC2046
    kill -KILL "$session_pid" $(descendants "$session_pid") 2>/dev/null || true
  fi
  if [ -n "$xvfb_pid" ] && kill -0 "$xvfb_pid" 2>/dev/null; then
    kill "$xvfb_pid" 2>/dev/null || true
    wait "$xvfb_pid" 2>/dev/null || true
  fi
  rm -rf "$env_dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export HOME="$env_dir/home"
export XDG_CONFIG_HOME="$HOME/.config"
export XDG_DATA_HOME="$HOME/.local/share"
export XDG_STATE_HOME="$HOME/.local/state"
export XDG_CACHE_HOME="$HOME/.cache"
export XDG_RUNTIME_DIR="$env_dir/run"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME"
mkdir -m 0700 "$XDG_RUNTIME_DIR"
chmod 0700 "$HOME"

# Only our X server: no Wayland, no inherited session bus or keyring sockets.
unset WAYLAND_DISPLAY DBUS_SESSION_BUS_ADDRESS GNOME_KEYRING_CONTROL SSH_AUTH_SOCK XAUTHORITY
export GDK_BACKEND=x11
# GTK otherwise looks for the accessibility bus and logs a warning per process.
export NO_AT_BRIDGE=1

# -displayfd makes Xvfb pick a free display itself and write its number once it accepts
# connections, so there is neither a race on display numbers nor a fixed sleep.
mkfifo "$env_dir/displayfd"
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp \
  3>"$env_dir/displayfd" >"$env_dir/xvfb.log" 2>&1 &
xvfb_pid=$!
display_number=""
read -r -t "$READY_TIMEOUT_SECS" display_number <"$env_dir/displayfd" || true
[ -n "$display_number" ] ||
  die "Xvfb did not start within ${READY_TIMEOUT_SECS}s: $(tail -n 20 "$env_dir/xvfb.log")"
export DISPLAY=":$display_number"
xdpyinfo >/dev/null 2>&1 || die "Xvfb reported display $DISPLAY but xdpyinfo cannot connect"

# The private bus is the host's standard session bus with one change: the names in
# NEVER_ACTIVATED are never started by D-Bus activation inside a test. A notification daemon
# the host happens to have installed (xfce4-notifyd, for one) would otherwise be activated by
# the app's first notification, keep org.freedesktop.Notifications for the rest of the run, and
# draw on the test display; the e2e tests put their own recording server on that name instead.
# Service directories listed first win, so ours (before the standard ones) shadows the host's
# with services that fail to start. Other activatable services (xfconfd for the real panel)
# stay as the host has them.
SESSION_BUS_CONFIG=/usr/share/dbus-1/session.conf
[ -r "$SESSION_BUS_CONFIG" ] || die "$SESSION_BUS_CONFIG not found (is dbus installed?)"
mkdir "$env_dir/dbus-services"
for name in "${NEVER_ACTIVATED[@]}"; do
  printf '[D-BUS Service]\nName=%s\nExec=/bin/false\n' "$name" \
    >"$env_dir/dbus-services/$name.service"
done
cat >"$env_dir/session-bus.conf" <<EOF_CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <servicedir>$env_dir/dbus-services</servicedir>
  <include>$SESSION_BUS_CONFIG</include>
</busconfig>
EOF_CONF

# In the background, so that a TERM/INT sent to this script is handled at once (bash defers
# traps while a foreground child runs) and cleanup stops the whole tree. It stays in our process
# group, so a signal to the group (a CI timeout) reaches it too. `<&0` keeps stdin, which bash
# would otherwise point at /dev/null for a background command.
dbus-run-session --config-file="$env_dir/session-bus.conf" -- "$self" __inside_dbus "$@" <&0 &
session_pid=$!
set +e
wait "$session_pid"
status=$?
set -e
exit "$status"
