#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build, run and test Callsign: the C toolchain,
# the WebKitGTK/GTK libraries Tauri links against, and Xvfb + WebKitWebDriver for the desktop
# end-to-end tests, and PostgreSQL, whose binaries the tests use to start throwaway clusters of
# their own on free ports (crates/callsign-pgtest); the `main` cluster that Debian's postinst may
# create and start on 5432 is never used. Idempotent: only missing packages are installed, so a
# second run is fast.
set -euo pipefail

pkgs=(
  build-essential pkg-config libssl-dev ca-certificates curl sqlite3
  libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libayatana-appindicator3-dev
  libsoup-3.0-dev libjavascriptcoregtk-4.1-dev
  xvfb xauth webkit2gtk-driver imagemagick xdotool desktop-file-utils
  fonts-dejavu-core fonts-liberation2 fontconfig dbus-x11 at-spi2-core
  python3 python3-venv
  postgresql
)
need=()
for pkg in "${pkgs[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust with rustup first" >&2
  exit 1
fi
if ! command -v node >/dev/null 2>&1; then
  echo "setup: node not found; install Node.js 20 first" >&2
  exit 1
fi
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt
