#!/usr/bin/env bash
# Builds the .deb with the Tauri bundler and checks it the way a user meets it: it installs with
# apt, puts both binaries (the command, which links no display library, and the tray app it
# execs) and a valid desktop entry in place, the desktop entry starts the app through the
# command, and removing the package leaves the user's receipts and ~/.canon untouched.
#
#   scripts/package-check.sh [--release | --deb FILE]
#
# CI runs it without --release: a debug bundle reuses what the test phase compiled, and packaging
# is the same for both profiles. `--release` builds what ships (LTO, stripped). Must run as root
# (or with passwordless sudo) because it installs and removes the package; run it inside
# scripts/test-env.sh so the launch check has a display and a session bus.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

# How long the installed app gets to start from its desktop entry before the check gives up.
LAUNCH_TIMEOUT_SECS=60

log() { printf 'package: %s\n' "$*"; }
die() { printf 'package: error: %s\n' "$*" >&2; exit 1; }
# No silent exit: a command that fails outside an `if` says which it was.
trap 'die "line $LINENO: \"$BASH_COMMAND\" failed"' ERR
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }
# The installed command and the tray app it execs (same process, so the app's pid is the one
# the desktop entry started, running this file).
cli_bin=/usr/bin/supercode-tray
app_bin=/usr/bin/supercode-tray-app
# The hook agents run on every event: it must be there for `hooks install`, and small.
hook_bin=/usr/bin/supercode-tray-hook
# Libraries the command must not link: loading them is what made it slow to start (issue 16).
display_libs='lib(gtk|gdk)-3\.so|libwebkit2gtk|libjavascriptcoregtk|appindicator'
# The app's single-instance name on the session bus (`doctor::APP_INSTANCE_ID`).
instance_name="$(sed -n 's/.*"identifier": *"\([^"]*\)".*/\1/p' tauri.conf.json).SingleInstance"
app_pids() {
  local proc
  for proc in /proc/[0-9]*; do
    [ "$(readlink "$proc/exe" 2>/dev/null)" = "$app_bin" ] && echo "${proc#/proc/}"
  done
  return 0
}

deb=""
profile_flag=(--debug)
profile_dir=debug
case "${1:-}" in
  --release) profile_flag=(); profile_dir=release ;;
  --deb) deb="$(realpath "${2:?--deb needs a file}")" ;;
  "") ;;
  *) die "usage: scripts/package-check.sh [--release | --deb FILE]" ;;
esac

if [ -z "$deb" ]; then
  [ -x ui/node_modules/.bin/tauri ] || npm --prefix ui ci --no-audit --no-fund
  target_dir="${CARGO_TARGET_DIR:-$REPO_ROOT/target}"
  log "bundling the .deb ($profile_dir)"
  ui/node_modules/.bin/tauri build "${profile_flag[@]}" --bundles deb
  # First lines are taken with sed, not head: head exits at once, and under pipefail the writer
  # it cut off (SIGPIPE) would fail the check for nothing.
  deb="$(ls -t "$target_dir/$profile_dir"/bundle/deb/*.deb | sed -n 1p)"
fi
[ -f "$deb" ] || die "no .deb was produced"
log "checking $deb ($(du -h "$deb" | cut -f1))"

package="$(dpkg-deb -f "$deb" Package)"
# The user's data, which removing the package must not touch.
data="$(mktemp -d)"
trap 'as_root dpkg -r "$package" >/dev/null 2>&1 || true; rm -rf "$data"' EXIT
export CANON_HOME="$data/canon" SUPERCODE_RUNTIME_DIR="$data/receipts"
mkdir -p "$CANON_HOME" && mkdir -m 0700 "$SUPERCODE_RUNTIME_DIR"
printf '{\n  "keep": {\n    "apiKey": "not-a-real-key",\n    "agentId": "a",\n    "agentName": "keep",\n    "registeredAt": "2026-01-01T00:00:00.000Z"\n  }\n}' >"$CANON_HOME/agents.json"
# The user's files, as checksums: what removing the package must leave as it found it.
user_files() { (cd "$data" && find canon receipts -type f -exec sha256sum {} + | sort); }
before="$(user_files)"

log "installing with apt (pulls in the declared dependencies)"
as_root apt-get install -y --no-install-recommends "$deb" >/dev/null
for bin in "$cli_bin" "$app_bin" "$hook_bin"; do
  [ -x "$bin" ] || die "$bin is missing after install"
done
"$cli_bin" --version
[ "$("$app_bin" --version)" = "$("$cli_bin" --version)" ] || die "$app_bin and $cli_bin are not the same version"
if ldd "$cli_bin" | grep -Eq "$display_libs"; then
  die "$cli_bin links display libraries: $(ldd "$cli_bin" | grep -E "$display_libs" | awk '{print $1}' | tr '\n' ' ')"
fi
log "$cli_bin links $(ldd "$cli_bin" | wc -l) shared libraries and none of the display stack; $app_bin links $(ldd "$app_bin" | wc -l)"
# The hook runs on every tool call of every agent session: only libc's own libraries to load.
hook_libs="$(ldd "$hook_bin" | awk '{print $1}' | grep -Ev '^(linux-vdso\.so|libc\.so|libgcc_s\.so|libm\.so|/lib64/ld-linux)' || true)"
[ -z "$hook_libs" ] || die "$hook_bin links more than libc: $(printf '%s ' $hook_libs)"
log "$hook_bin links only libc's libraries"
desktop="$(dpkg -L "$package" | grep '\.desktop$' | sed -n 1p)"
[ -n "$desktop" ] || die "the package installs no desktop entry"
desktop-file-validate "$desktop"
grep -qx 'Exec=supercode-tray' "$desktop" || die "the desktop entry does not start supercode-tray: $(grep '^Exec=' "$desktop")"
for size in 32x32 128x128; do
  dpkg -L "$package" | grep -q "icons/hicolor/$size/apps/" || die "no $size icon installed"
done

if [ -n "${DISPLAY:-}" ]; then
  log "starting the app from its desktop entry"
  log_dir="$data/logs"
  launch_log="$data/launch.log"
  # The launch gets a session bus of its own: an app that an earlier test phase left on the
  # shared bus would own the single-instance name, and this app would hand over to it and exit.
  # Such a leftover is named here all the same, since it is a fault of its own.
  if owner="$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.GetConnectionUnixProcessID "string:$instance_name" 2>/dev/null)"; then
    owner="$(printf '%s\n' "$owner" | sed -n 's/.*uint32 //p')"
    log "warning: $instance_name is already owned on the shared session bus, by: $(ps -o pid=,args= -p "$owner" || echo "pid $owner")"
  fi
  # The bus lives while the inner shell does: until the check removes $keep.
  bus_file="$data/bus" keep="$data/keep"
  touch "$keep"
  SUPERCODE_LOG_DIR="$log_dir" SUPERCODE_STATE_DIR="$data/state" dbus-run-session -- sh -c \
    'printf %s "$DBUS_SESSION_BUS_ADDRESS" >"$2"; gio launch "$1" || exit; while [ -e "$3" ]; do sleep 0.2; done' \
    sh "$desktop" "$bus_file" "$keep" >"$launch_log" 2>&1 &
  deadline=$((SECONDS + LAUNCH_TIMEOUT_SECS))
  until [ -n "$(app_pids)" ] && ls "$log_dir"/supercode-tray*.log >/dev/null 2>&1 &&
    grep -q 'starting Supercode Tray' "$log_dir"/supercode-tray*.log; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      printf -- '--- the launch (gio, the command, the app) printed:\n%s\n' "$(tail -n 40 "$launch_log")" >&2
      printf -- '--- the app logged:\n%s\n' "$(tail -n 40 "$log_dir"/supercode-tray*.log 2>/dev/null || echo '(no log file)')" >&2
      die "the app did not start from its desktop entry within ${LAUNCH_TIMEOUT_SECS}s"
    fi
    sleep 0.5
  done
  pid="$(app_pids | sed -n 1p)"
  # Exec=supercode-tray ran the command, which exec'd the app: argv[0] is still the command's.
  argv0="$(tr '\0' '\n' <"/proc/$pid/cmdline" | sed -n 1p)"
  [ "$argv0" = supercode-tray ] || die "the app process $pid was not started through supercode-tray (argv[0] $argv0)"
  log "the desktop entry started the app through supercode-tray (pid $pid, now running $app_bin); it logs to $log_dir"
  DBUS_SESSION_BUS_ADDRESS="$(cat "$bus_file")" "$cli_bin" doctor || true
  # shellcheck disable=SC2046 # one pid per word
  kill $(app_pids) 2>/dev/null || true
  deadline=$((SECONDS + 10))
  while [ -n "$(app_pids)" ]; do
    [ "$SECONDS" -lt "$deadline" ] || die "the app ($(app_pids | tr '\n' ' ')) was still running 10 s after SIGTERM"
    sleep 0.2
  done
  rm -f "$keep"
else
  log "no display: skipping the launch check"
fi

log "removing the package"
as_root dpkg -r "$package" >/dev/null
for bin in "$cli_bin" "$app_bin" "$hook_bin"; do
  [ ! -e "$bin" ] || die "$bin is still there after removal"
done
after="$(user_files)"
if [ "$before" != "$after" ]; then
  diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") >&2 || true
  die "installing, running or removing the package changed the user's receipts or CANON_HOME (above: - before, + after)"
fi
log "ok: the .deb installs, starts from its desktop entry, and uninstalls leaving user data untouched"
