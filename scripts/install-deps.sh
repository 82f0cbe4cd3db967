#!/usr/bin/env bash
# Installs what building and running Supercode Tray needs on Debian 12 / Ubuntu 22.04+.
#
#   scripts/install-deps.sh          build + run dependencies
#   scripts/install-deps.sh --test   also everything the test suite needs (Xvfb, D-Bus,
#                                    gnome-keyring, browsers and WebDriver, tauri-driver,
#                                    the pinned Claude Code CLI, tmux, ...)
#
# Idempotent and fast on a warm machine: packages already installed (checked with dpkg-query)
# are skipped, and `apt-get update` runs at most once, only when something is missing.
# Runs unattended (no prompts, stdin not needed); uses sudo when not root.
# Functions called only from traps or through run_phase are reachable, whatever shellcheck infers.
# shellcheck disable=SC2317
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# tauri-driver lives in the repository, not in ~/.cargo, so the test suite never depends on
# (or changes) the user's global cargo installs.
TOOLS_DIR="$REPO_ROOT/.tools"
# Pinned: the e2e harness was verified with this version against Debian 12's WebKitWebDriver;
# an unpinned install would change under CI without a commit.
TAURI_DRIVER_VERSION=2.1.0
# ui/package.json's engines: Vite 7 needs Node 20.19+ (or 22.12+).
MIN_NODE_MAJOR=20
MIN_NODE_MINOR=19
# An unattended-upgrades run on a fresh desktop holds the dpkg lock for a few minutes;
# wait for it instead of failing.
APT_LOCK_TIMEOUT_SECS=600

want_test=0
for arg in "$@"; do
  case "$arg" in
    --test) want_test=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown argument '$arg' (expected --test)" >&2; exit 2 ;;
  esac
done

log() { printf 'install-deps: %s\n' "$*"; }
die() { printf 'install-deps: error: %s\n' "$*" >&2; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  # -n: never prompt for a password when there is no terminal (CI); fail instead.
  if [ -t 0 ]; then SUDO=(sudo); else SUDO=(sudo -n); fi
else
  SUDO=()
fi

command -v dpkg-query >/dev/null 2>&1 || die "this script supports Debian/Ubuntu (dpkg + apt) only; install the packages listed in $0 with your package manager"

distro_id="unknown"
if [ -r /etc/os-release ]; then
  # shellcheck disable=SC1091
  distro_id="$(. /etc/os-release && echo "${ID:-unknown}")"
fi

build_pkgs=(
  build-essential pkg-config
  # Tauri 2 on Linux
  libwebkit2gtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev libxdo-dev libssl-dev
  # keyring's Secret Service backend talks D-Bus
  libdbus-1-dev
)
# "a|b": either package will do (the first one apt knows is installed). Ubuntu 24.04 and Debian
# 13 dropped nginx-light; Ubuntu calls chromium chromium-browser.
test_pkgs=(
  xvfb xauth x11-utils
  dbus dbus-x11 gnome-keyring libsecret-tools
  "chromium|chromium-browser" "chromium-driver|chromium-chromedriver" webkit2gtk-driver
  "nginx-light|nginx" wrk imagemagick procps
  # the second-OS-user tests: curl stands in for a browser, setpriv and useradd come with the base
  curl util-linux passwd
  # the package check: validate the .deb's desktop entry and launch the app from it
  desktop-file-utils libglib2.0-bin
  # the stand-in tray host of the tray e2e tests (tests/e2e/tray-host.py)
  python3-gi gir1.2-glib-2.0
  # the real panel of tests/e2e/panel.test.mjs: xfce4-panel's systray plugin is a
  # StatusNotifierWatcher and host (its xfconf dependency brings xfconfd); xdotool clicks it
  xfce4-panel xdotool
  # the real Claude Code CLI runs interactively in a terminal (tests/supercode_tray/claude_code.rs)
  tmux
)
# Packages whose absence is tolerated: on Ubuntu chromium is only a snap wrapper, which does
# not work in containers/CI; the browser tests then fail loudly on their own (SUPERCODE_REQUIRE_BROWSER).
optional_pkgs=()
if [ "$distro_id" = "ubuntu" ]; then
  optional_pkgs=("chromium|chromium-browser" "chromium-driver|chromium-chromedriver")
fi

is_installed() {
  [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" = "ii " ]
}

# An "a|b" entry is satisfied by any one of its packages.
any_installed() {
  local p
  local IFS='|'
  for p in $1; do is_installed "$p" && return 0; done
  return 1
}

# The package to install for an "a|b" entry: the first one apt has a candidate for.
pick_candidate() {
  local p policy
  local IFS='|'
  for p in $1; do
    # Captured first: with pipefail, `apt-cache ... | grep -q` can fail on SIGPIPE after a match.
    policy="$(apt-cache policy "$p" 2>/dev/null)"
    case "$policy" in
      *"Candidate: (none)"* | "") ;;
      *"Candidate: "*) echo "$p"; return 0 ;;
    esac
  done
  echo "${1%%|*}"
}

is_optional() {
  local p
  for p in "${optional_pkgs[@]+"${optional_pkgs[@]}"}"; do [ "$p" = "$1" ] && return 0; done
  return 1
}

apt_updated=0
apt_get() {
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]+"${SUDO[@]}"}" apt-get \
    -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT_SECS" -q "$@" </dev/null
}
apt_update_once() {
  if [ "$apt_updated" -eq 0 ]; then
    log "apt-get update"
    apt_get update
    apt_updated=1
  fi
}

install_missing() {
  local missing=() optional_missing=() p
  for p in "$@"; do
    any_installed "$p" && continue
    if is_optional "$p"; then optional_missing+=("$p"); else missing+=("$p"); fi
  done
  if [ "${#missing[@]}" -eq 0 ] && [ "${#optional_missing[@]}" -eq 0 ]; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ] && [ "${#SUDO[@]}" -eq 0 ]; then
    die "missing packages (${missing[*]} ${optional_missing[*]}) and not root and no sudo: install them as root"
  fi
  apt_update_once
  if [ "${#missing[@]}" -gt 0 ]; then
    local names=()
    for p in "${missing[@]}"; do names+=("$(pick_candidate "$p")"); done
    log "installing: ${names[*]}"
    apt_get install -y --no-install-recommends "${names[@]}"
  fi
  for p in "${optional_missing[@]+"${optional_missing[@]}"}"; do
    p="$(pick_candidate "$p")"
    log "installing optional package $p"
    apt_get install -y --no-install-recommends "$p" ||
      log "warning: could not install $p on $distro_id; tests needing it will fail (install it by hand)"
  done
}

pkgs=("${build_pkgs[@]}")
if [ "$want_test" -eq 1 ]; then pkgs+=("${test_pkgs[@]}"); fi
install_missing "${pkgs[@]}"
log "system packages: ok (${#pkgs[@]} checked)"

# --- Node.js -------------------------------------------------------------------------------
# Debian 12's own nodejs is 18, too old for ui/. We do not add third-party apt sources
# behind the user's back; we say exactly what to do instead.
node_is_recent() {
  node -e "const [a, b] = process.versions.node.split('.').map(Number);
    process.exit(a > $MIN_NODE_MAJOR || (a === $MIN_NODE_MAJOR && b >= $MIN_NODE_MINOR) ? 0 : 1)" 2>/dev/null
}
if ! command -v node >/dev/null 2>&1 || ! node_is_recent || ! command -v npm >/dev/null 2>&1; then
  found="$(command -v node >/dev/null 2>&1 && node --version || echo 'none')"
  die "Node.js >= $MIN_NODE_MAJOR.$MIN_NODE_MINOR with npm is required (found: $found).
  Debian 12's nodejs package is 18. Install Node 20 LTS, for example:
    - NodeSource:  curl -fsSL https://deb.nodesource.com/setup_20.x | sudo -E bash - && sudo apt-get install -y nodejs
    - or nvm:      https://github.com/nvm-sh/nvm  (nvm install 20)
  then re-run $0"
fi
log "node $(node --version), npm $(npm --version): ok"

# --- Rust ----------------------------------------------------------------------------------
command -v cargo >/dev/null 2>&1 ||
  die "Rust (cargo) is required: install it with rustup (https://rustup.rs), then re-run $0"
if [ "$want_test" -eq 1 ]; then
  cargo fmt --version >/dev/null 2>&1 || die "rustfmt is missing: rustup component add rustfmt"
  cargo clippy --version >/dev/null 2>&1 || die "clippy is missing: rustup component add clippy"
fi
log "$(cargo --version): ok"

# --- tauri-driver (end-to-end tests only) --------------------------------------------------
if [ "$want_test" -eq 1 ]; then
  if [ -x "$TOOLS_DIR/bin/tauri-driver" ] &&
    grep -q "^\"tauri-driver $TAURI_DRIVER_VERSION " "$TOOLS_DIR/.crates.toml" 2>/dev/null; then
    log "tauri-driver $TAURI_DRIVER_VERSION: ok ($TOOLS_DIR/bin/tauri-driver)"
  else
    log "installing tauri-driver $TAURI_DRIVER_VERSION into $TOOLS_DIR (cargo install --locked, about a minute)"
    cargo install tauri-driver --version "=$TAURI_DRIVER_VERSION" --locked --force --root "$TOOLS_DIR" </dev/null
  fi
fi

# --- Claude Code and Codex (their real-CLI tests only) --------------------------------------
# Each pinned by its package-lock.json (tests/claude-code, tests/codex). The tests run each
# one's native binary directly, so the postinstall scripts (which only copy that binary over a
# placeholder) are not needed.
# pinned_agent NAME DIR BINARY VERSION_LINE: `npm ci` into DIR unless BINARY prints VERSION_LINE.
pinned_agent() {
  if [ -x "$3" ] && [ "$("$3" --version 2>/dev/null)" = "$4" ]; then
    log "$1: ok ($3)"
  else
    log "installing $1 into $2 (npm ci)"
    npm --prefix "$2" ci --ignore-scripts --no-audit --no-fund </dev/null
  fi
}
if [ "$want_test" -eq 1 ]; then
  pinned_agent "Claude Code 2.1.332" "$REPO_ROOT/tests/claude-code" \
    "$REPO_ROOT/tests/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude" \
    "2.1.332 (Claude Code)"
  pinned_agent "Codex 0.171.0" "$REPO_ROOT/tests/codex" \
    "$REPO_ROOT/tests/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex" \
    "codex-cli 0.171.0"
fi

log "done"
