#!/usr/bin/env bash
# The real Taskwarrior 3.5, for the end-to-end test that drives `task sync` against the server
# (tests/e2e/task3.rs). Debian 12 ships Taskwarrior 2.6; Debian unstable (sid) ships 3.5, built
# against a newer glibc. This fetches sid's taskwarrior package and the C/C++ runtime it needs
# with `apt-get download` (a private apt state; the system's apt is not touched), unpacks them
# with `dpkg -x` into target/taskwarrior3/, and writes target/taskwarrior3/task, a wrapper that
# runs the binary through sid's own dynamic loader. Idempotent: a working copy is reused.
#
# Prints the wrapper's absolute path on stdout, nothing else; progress and errors go to stderr.
# Exits non-zero, with the reason on stderr, if anything fails. Needs apt-get and dpkg (Debian
# or a derivative, amd64) and root for apt-get.
#
# The apt mirror is the one this machine's apt is configured with.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$root/target/taskwarrior3"
wrapper="$cache/task"

fail() {
    echo "taskwarrior3.sh: $*" >&2
    exit 1
}

# Whether the wrapper is there and runs a Taskwarrior 3.
works() {
    [ -x "$wrapper" ] || return 1
    local v
    v="$(TASKRC=/dev/null TASKDATA="$cache/probe-data" timeout 30 "$wrapper" --version 2>/dev/null)" ||
        return 1
    rm -rf "$cache/probe-data"
    case "$v" in 3.*) return 0 ;; *) return 1 ;; esac
}

case "$cache" in *"'"*) fail "the path $cache holds a single quote" ;; esac
mkdir -p "$cache"
# One fetch at a time (two test runs may start together).
exec 9>"$cache/.lock"
flock -w 900 9 || fail "timed out waiting for another fetch ($cache/.lock)"

if works; then
    echo "$wrapper"
    exit 0
fi

for tool in apt-get dpkg timeout; do
    command -v "$tool" >/dev/null || fail "$tool not found (a Debian system is needed)"
done
arch="$(dpkg --print-architecture)"
[ "$arch" = amd64 ] || fail "only amd64 is supported, this is $arch"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || fail "$keyring not found (package debian-archive-keyring)"

# The Debian mirror this machine's apt already uses: the first archive (not security) URI of
# the deb822 sources, else of the one-line sources.
mirror=""
shopt -s nullglob
sources=(/etc/apt/sources.list.d/*.sources)
lists=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list)
shopt -u nullglob
if [ ${#sources[@]} -gt 0 ]; then
    mirror="$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
        "${sources[@]}")"
fi
if [ -z "$mirror" ]; then
    for f in "${lists[@]}"; do
        [ -r "$f" ] || continue
        mirror="$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {
            if ($i !~ /security/) { print $i; exit } else break } }' "$f")"
        [ -n "$mirror" ] && break
    done
fi
[ -n "$mirror" ] || fail "no Debian mirror found in the apt configuration (/etc/apt/sources.list*)"

echo "taskwarrior3.sh: fetching Taskwarrior 3.5 from Debian sid ($mirror) into $cache" >&2
work="$(mktemp -d "$cache/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts" "$work/debs" "$work/root"
echo "deb [signed-by=$keyring] $mirror sid main" >"$work/sources.list"
apt_opts=(
    -o "Dir::Etc::SourceList=$work/sources.list"
    -o "Dir::Etc::SourceParts=$work/parts"
    -o "Dir::State::Lists=$work/lists"
    -o "Dir::Cache=$work/cache"
    -o "APT::Sandbox::User=root"
    -o "Acquire::Retries=2"
)
log="$work/apt.log"
if ! timeout 600 apt-get "${apt_opts[@]}" --error-on=any update -qq >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    fail "apt-get update of sid failed (see above)"
fi
if ! (cd "$work/debs" &&
    timeout 600 apt-get "${apt_opts[@]}" download taskwarrior libc6 libstdc++6 libgcc-s1) \
    >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    fail "apt-get download from sid failed (see above)"
fi
for deb in "$work"/debs/*.deb; do
    dpkg -x "$deb" "$work/root" || fail "dpkg -x $deb failed"
done

lib="$work/root/usr/lib/x86_64-linux-gnu"
[ -x "$work/root/usr/bin/task" ] || fail "the taskwarrior package holds no usr/bin/task"
[ -x "$lib/ld-linux-x86-64.so.2" ] || fail "the libc6 package holds no ld-linux-x86-64.so.2"

# Into place: root/ the unpacked packages; themes/ the working dir of every run (below).
rm -rf "$cache/root" "$cache/themes"
mv "$work/root" "$cache/root"
mkdir -p "$cache/themes"
cp "$cache/root/usr/share/taskwarrior/"*.theme "$cache/themes/" ||
    fail "no themes in the taskwarrior package"

lib="$cache/root/usr/lib/x86_64-linux-gnu"
cat >"$wrapper.tmp" <<EOF
#!/usr/bin/env bash
# Written by scripts/taskwarrior3.sh: Taskwarrior 3.5 from Debian sid, unpacked in root/ beside
# this script and run through sid's own dynamic loader (its glibc is newer than this system's;
# libuuid and libsqlite3 come from this system).
#
# This build looks for default.theme (included by its built-in defaults) in its compiled-in data
# dir, which is not there, and in the working directory; "beside TASKRC" is not searched. So it
# runs with the themes dir as its working directory. TASKRC, TASKDATA and rc:FILE given as
# relative paths are made absolute first; other relative paths in arguments (rc.data.location=,
# import FILE) would be resolved against the themes dir.
for v in TASKRC TASKDATA; do
    case "\${!v:-}" in '' | /*) ;; *) export "\$v=\$PWD/\${!v}" ;; esac
done
args=()
for a in "\$@"; do
    case "\$a" in rc:/*) ;; rc:*) a="rc:\$PWD/\${a#rc:}" ;; esac
    args+=("\$a")
done
cd '$cache/themes' || exit 1
exec '$lib/ld-linux-x86-64.so.2' --argv0 task \\
    --library-path '$lib:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu' \\
    '$cache/root/usr/bin/task' "\${args[@]}"
EOF
chmod +x "$wrapper.tmp"
mv "$wrapper.tmp" "$wrapper"

if ! works; then
    TASKRC=/dev/null TASKDATA="$work/probe" timeout 30 "$wrapper" --version >&2 || true
    fail "the unpacked Taskwarrior does not run (see above)"
fi
echo "taskwarrior3.sh: $("$wrapper" --version 2>/dev/null) ready" >&2
echo "$wrapper"
