#!/usr/bin/env bash
# Builds the Debian packages into target/packages/:
#   callsign-server_VERSION_ARCH.deb   the server, its systemd unit (user `callsign`, data in
#                                      /var/lib/callsign), /etc/default/callsign-server,
#                                      shell completions
#   callsign_VERSION_ARCH.deb          the `callsign` CLI and its shell completions
#   callsign-desktop_VERSION_ARCH.deb  the desktop app, its hicolor icons and desktop entry,
#                                      made by the Tauri bundler (settings: "bundle" in
#                                      src-tauri/tauri.conf.json, packaging/desktop/)
# `--debug` packages the debug build (what the test command checks); the default is release.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
[ "${1:-}" = "--debug" ] && profile=debug
# The app embeds ui/dist. A release package gets a fresh UI build; a debug one reuses ui/dist
# when there is one (the test command has just built it, and rebuilding it would make cargo
# recompile the app).
[ -x ui/node_modules/.bin/tauri ] || (cd ui && npm ci --no-audit --no-fund)
if [ "$profile" = release ] || [ ! -f ui/dist/index.html ]; then
  (cd ui && npm run build >/dev/null)
fi
# The same three packages as scripts/test-desktop.sh, so a debug build here is already fresh.
if [ "$profile" = release ]; then
  cargo build --release --locked -p callsign-desktop -p callsign-server -p callsign-cli
else
  cargo build --locked -p callsign-desktop -p callsign-server -p callsign-cli
fi
bin="target/$profile"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
arch=$(dpkg --print-architecture)
out=target/packages
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# completions NAME ROOT: the bash, zsh and fish scripts where Debian's shells look for them.
completions() {
  local name=$1 root=$2
  install -d "$root/usr/share/bash-completion/completions" \
    "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
  "$bin/$name" completions bash >"$root/usr/share/bash-completion/completions/$name"
  "$bin/$name" completions zsh >"$root/usr/share/zsh/vendor-completions/_$name"
  "$bin/$name" completions fish >"$root/usr/share/fish/vendor_completions.d/$name.fish"
}

# control NAME ROOT DESCRIPTION [DEPENDS]
control() {
  local name=$1 root=$2 description=$3 depends=${4:-}
  install -d "$root/DEBIAN"
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: Callsign <callsign@localhost>"
    echo "Section: utils"
    echo "Priority: optional"
    echo "Depends: libc6 (>= 2.36)${depends:+, $depends}"
    echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
    echo "Description: $description"
  } >"$root/DEBIAN/control"
}

# The server.
root="$work/callsign-server"
install -D -m 0755 "$bin/callsign-server" "$root/usr/bin/callsign-server"
install -D -m 0644 packaging/server/callsign-server.service \
  "$root/lib/systemd/system/callsign-server.service"
install -D -m 0644 packaging/server/default "$root/etc/default/callsign-server"
install -D -m 0644 packaging/server/README.md "$root/usr/share/doc/callsign-server/README.md"
completions callsign-server "$root"
control callsign-server "$root" "Callsign sync server: short task keys (SYN-42) for teams" adduser
echo /etc/default/callsign-server >"$root/DEBIAN/conffiles"
install -m 0755 packaging/server/postinst packaging/server/postrm "$root/DEBIAN/"
dpkg-deb --root-owner-group --build "$root" "$out/callsign-server_${version}_${arch}.deb" >/dev/null

# The CLI.
root="$work/callsign"
install -D -m 0755 "$bin/callsign" "$root/usr/bin/callsign"
completions callsign "$root"
control callsign "$root" "Callsign command line: offline-first tasks with speakable keys"
dpkg-deb --root-owner-group --build "$root" "$out/callsign_${version}_${arch}.deb" >/dev/null

# The desktop app: `tauri bundle` packages the binary cargo has just built (it does not build).
# It works on a copy in a target dir of its own: after bundling, tauri-cli 2.12 writes the
# binary back in place even with --no-binary-patching, which fails with "Text file busy" (and
# could break the run) while a test is running target/*/callsign-desktop.
# --no-binary-patching keeps the packaged binary byte for byte the one the tests ran (the patch
# only marks the bundle type for Tauri's updater, which the app does not use).
bundle_target="$work/tauri-target"
install -D -m 0755 "$bin/callsign-desktop" "$bundle_target/$profile/callsign-desktop"
bundle=(bundle --bundles deb --no-binary-patching --ci)
[ "$profile" = debug ] && bundle+=(--debug)
if ! log=$(cd src-tauri && CARGO_TARGET_DIR="$bundle_target" node ../ui/node_modules/.bin/tauri "${bundle[@]}" 2>&1); then
  echo "$log" >&2
  exit 1
fi
deb="$bundle_target/$profile/bundle/deb/callsign-desktop_${version}_${arch}.deb"
[ -f "$deb" ] || { echo "$log" >&2; echo "package: the Tauri bundler made no ${deb#"$work"/}" >&2; exit 1; }
cp "$deb" "$out/"

ls -1 "$out"/*.deb
