#!/usr/bin/env bash
# Checks the packages scripts/package.sh made: each installs into a temporary root
# (`dpkg -x`) with its binary (which runs), its completions, and for the server its systemd
# unit, defaults file and maintainer scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/packages
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fail() { echo "check-packages: $*" >&2; exit 1; }

for deb in "$out"/callsign-server_*.deb "$out"/callsign_*.deb; do
  [ -f "$deb" ] || fail "no $deb: run scripts/package.sh first"
  dpkg-deb --info "$deb" >/dev/null || fail "$deb is not a Debian package"
  dpkg -x "$deb" "$root"
done

for name in callsign-server callsign; do
  [ -x "$root/usr/bin/$name" ] || fail "/usr/bin/$name missing or not executable"
  "$root/usr/bin/$name" --version | grep -q "$name" || fail "$name --version"
  grep -q "complete -F .* $name\$" "$root/usr/share/bash-completion/completions/$name" \
    || fail "no bash completion for $name"
  head -n1 "$root/usr/share/zsh/vendor-completions/_$name" | grep -q "#compdef $name" \
    || fail "no zsh completion for $name"
  [ -s "$root/usr/share/fish/vendor_completions.d/$name.fish" ] || fail "no fish completion for $name"
done

unit="$root/lib/systemd/system/callsign-server.service"
[ -f "$unit" ] || fail "no systemd unit"
grep -q '^ExecStart=/usr/bin/callsign-server serve --data-dir /var/lib/callsign' "$unit" \
  || fail "the unit does not serve /var/lib/callsign"
grep -q '^User=callsign$' "$unit" || fail "the unit does not run as user callsign"
[ -f "$root/etc/default/callsign-server" ] || fail "no /etc/default/callsign-server"
dpkg-deb --ctrl-tarfile "$out"/callsign-server_*.deb | tar -t | grep -q '^./postinst$' \
  || fail "the server package has no postinst (it makes the user callsign)"
dpkg-deb --field "$out"/callsign-server_*.deb Depends | grep -q adduser \
  || fail "the server package does not depend on adduser"
echo "check-packages: $(cd "$out" && ls -- *.deb | tr '\n' ' ')install with their binaries and completions, the server with its unit"
