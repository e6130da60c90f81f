#!/usr/bin/env bash
# Checks the packages scripts/package.sh made: each installs into a temporary root
# (`dpkg -x`) with its binary (which runs), its completions, and for the server its systemd
# unit, defaults file and maintainer scripts; the desktop app's with its binary, hicolor icons
# and a desktop entry that launches it (checked by desktop-file-validate when
# desktop-file-utils is installed).
#
# Under pipefail, `cmd | grep -q` fails when grep quits at its first match while cmd still
# writes (SIGPIPE): every check reads a captured output instead.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/packages
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fail() { echo "check-packages: $*" >&2; exit 1; }

for deb in "$out"/callsign-server_*.deb "$out"/callsign_*.deb "$out"/callsign-desktop_*.deb; do
  [ -f "$deb" ] || fail "no $deb: run scripts/package.sh first"
  dpkg-deb --info "$deb" >/dev/null || fail "$deb is not a Debian package"
  dpkg -x "$deb" "$root"
done

for name in callsign-server callsign; do
  [ -x "$root/usr/bin/$name" ] || fail "/usr/bin/$name missing or not executable"
  grep -q "$name" <<<"$("$root/usr/bin/$name" --version)" || fail "$name --version"
  grep -q "complete -F .* $name\$" "$root/usr/share/bash-completion/completions/$name" \
    || fail "no bash completion for $name"
  grep -q "#compdef $name" <<<"$(head -n1 "$root/usr/share/zsh/vendor-completions/_$name")" \
    || fail "no zsh completion for $name"
  [ -s "$root/usr/share/fish/vendor_completions.d/$name.fish" ] || fail "no fish completion for $name"
done

unit="$root/lib/systemd/system/callsign-server.service"
[ -f "$unit" ] || fail "no systemd unit"
grep -q '^ExecStart=/usr/bin/callsign-server serve --data-dir /var/lib/callsign' "$unit" \
  || fail "the unit does not serve /var/lib/callsign"
grep -q '^User=callsign$' "$unit" || fail "the unit does not run as user callsign"
[ -f "$root/etc/default/callsign-server" ] || fail "no /etc/default/callsign-server"
control=$(dpkg-deb --ctrl-tarfile "$out"/callsign-server_*.deb | tar -t)
grep -qx './postinst' <<<"$control" \
  || fail "the server package has no postinst (it makes the user callsign)"
grep -q adduser <<<"$(dpkg-deb --field "$out"/callsign-server_*.deb Depends)" \
  || fail "the server package does not depend on adduser"

# The desktop app. Its package must not be called `callsign` (the CLI's name), which is what the
# Tauri bundler would make of a productName "Callsign".
app=("$out"/callsign-desktop_*.deb)
[ "$(dpkg-deb --field "${app[0]}" Package)" = callsign-desktop ] \
  || fail "the app's package is not called callsign-desktop"
# The libraries the app links or (the tray's) loads at run time.
depends=$(dpkg-deb --field "${app[0]}" Depends | tr ',' '\n' | sed 's/^ *//; s/[ (].*//')
for lib in libwebkit2gtk-4.1-0 libgtk-3-0 libayatana-appindicator3-1; do
  grep -qx "$lib" <<<"$depends" || fail "the app's package does not depend on $lib"
done
[ -x "$root/usr/bin/callsign-desktop" ] || fail "/usr/bin/callsign-desktop missing or not executable"
# png_size FILE: WIDTHxHEIGHT from the PNG header, nothing when FILE is not a PNG.
png_size() {
  [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = 89504e470d0a1a0a ] || return 0
  od -An -tu1 -j16 -N8 "$1" | awk '{print $1*2^24+$2*2^16+$3*2^8+$4 "x" $5*2^24+$6*2^16+$7*2^8+$8}'
}
for size in 32 64 128 512; do
  icon="$root/usr/share/icons/hicolor/${size}x${size}/apps/callsign-desktop.png"
  [ -f "$icon" ] || fail "no ${size}x${size} hicolor icon"
  [ "$(png_size "$icon")" = "${size}x${size}" ] || fail "the ${size}x${size} icon is not a ${size}x${size} PNG"
done
entries=("$root"/usr/share/applications/*.desktop)
entry=${entries[0]}
[ -f "$entry" ] || fail "no desktop entry in /usr/share/applications"
[ ${#entries[@]} -eq 1 ] || fail "want one desktop entry, found ${#entries[@]}"
key() { sed -n "s/^$1=//p" "$entry"; }
[ "$(key Type)" = Application ] || fail "the desktop entry is not Type=Application"
[ "$(key Name)" = Callsign ] || fail "the desktop entry is not Name=Callsign"
[ "$(key Exec)" = callsign-desktop ] || fail "the desktop entry does not Exec=callsign-desktop"
# GTK names the window's WM_CLASS after the program, so the window groups with its launcher.
[ "$(key StartupWMClass)" = callsign-desktop ] || fail "the desktop entry's StartupWMClass is not callsign-desktop"
key Categories | grep -Eq '(^|;)(Office|Utility);' || fail "the desktop entry is in neither Office nor Utility"
icon=$(key Icon)
[ -f "$root/usr/share/icons/hicolor/128x128/apps/${icon:-none}.png" ] \
  || fail "the desktop entry's Icon=$icon is not one of the package's icons"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$entry" || fail "desktop-file-validate rejects ${entry#"$root"}"
  validated="validated"
else
  validated="not validated: no desktop-file-validate (Debian's desktop-file-utils)"
fi

echo "check-packages: $(cd "$out" && ls -- *.deb | tr '\n' ' ')install with their binaries; the server and"
echo "  the CLI with completions, the server with its unit, the app with its icons and ${entry#"$root"} ($validated)"
