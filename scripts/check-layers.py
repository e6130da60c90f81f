#!/usr/bin/env python3
"""The workspace's shape, checked: part of the test command (scripts/test.sh).

1. Crates depend one way. Every workspace crate has a rank (RANKS below); a dependency may only
   point at a lower rank, so the server's crates stay core <- storage <- {sqlite, postgres,
   conformance} <- server, and neither backend can reach the other. A dev-dependency may also
   point at its own rank (a backend's tests run the conformance suite), never up. The edges
   come from `cargo metadata`, so a new crate must be given a rank here first.
2. No import circle of more than two files inside any crate. Each `.rs` file is a node; an
   edge goes from a file to each file whose module it names (`use crate::a::b`, `super::x`,
   `crate::a::b::f(..)` or a child's `a::f(..)` in code; a `mod x;` declaration is not an
   import). Circles are the
   strongly connected components (Tarjan's algorithm); any of more than two files fails.

Run: python3 scripts/check-layers.py   (exit 1 with the offending edges or circles).
     python3 scripts/check-layers.py --self-test   (the checks against small fixtures that
     must pass and must fail; the test command runs it first).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

RANKS = {
    "callsign-core": 0,
    "callsign-storage": 1,
    "callsign-tcstore": 1,
    "callsign-pgtest": 1,
    "callsign-storage-sqlite": 2,
    "callsign-storage-postgres": 2,
    "callsign-storage-conformance": 2,
    "callsign-sync": 2,
    "callsign-import": 1,
    "callsign-server": 3,
    "callsign-cli": 3,
    "callsign-bench": 4,
    "callsign-e2e": 4,
    "callsign-desktop": 4,
}

# Crates of the same rank that must never meet, even as dev-dependencies.
APART = [{"callsign-storage-sqlite", "callsign-storage-postgres"}]


def crate_edges(meta):
    errors = []
    members = {p["id"] for p in meta["packages"]} & set(meta["workspace_members"])
    by_name = {p["name"]: p for p in meta["packages"] if p["id"] in members}
    for name, pkg in sorted(by_name.items()):
        if name not in RANKS:
            errors.append(f"{name}: no rank in scripts/check-layers.py (RANKS)")
            continue
        for dep in pkg["dependencies"]:
            other = dep["name"]
            if other not in by_name or other == name:
                continue
            if other not in RANKS:
                continue
            dev = dep.get("kind") == "dev"
            a, b = RANKS[name], RANKS[other]
            ok = b < a or (dev and b == a)
            if any({name, other} <= pair for pair in APART):
                ok = False
            if not ok:
                kind = "dev-dependency" if dev else "dependency"
                errors.append(
                    f"{name} (rank {a}) has a {kind} on {other} (rank {b}): "
                    "dependencies point down only"
                )
    return errors, by_name


def strip(src):
    """The code of a file without comments, strings' contents and its inline test module."""
    m = re.search(r"\n#\[cfg\(test\)\]\s*\nmod \w+ \{", src)
    if m:
        src = src[: m.start()]
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    src = re.sub(r"//[^\n]*", "", src)
    src = re.sub(r'"(?:\\.|[^"\\])*"', '""', src)
    return src


def expand(tree):
    """`a::{b, c::{d, e as f}}` -> ['a::b', 'a::c::d', 'a::c::e@f']."""
    tree = re.sub(r"\s+as\s+", "@", tree)
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, s):
        i = s.find("{")
        if i < 0:
            for part in split_top(s):
                out.append(prefix + part)
            return
        head = s[:i]
        depth, j = 0, i
        for j in range(i, len(s)):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    break
        inner = s[i + 1 : j]
        for part in split_top(inner):
            walk(prefix + head, part)

    for part in split_top(tree):
        walk("", part)
    return out


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            if cur:
                parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return parts


def module_files(root_file):
    """Module path (tuple) -> file, for the crate rooted at `root_file`."""
    root_dir = os.path.dirname(root_file)
    files = {(): root_file}
    for dirpath, dirnames, filenames in os.walk(root_dir):
        if os.path.abspath(dirpath) == os.path.abspath(os.path.join(root_dir, "bin")):
            dirnames[:] = []
            continue
        for f in filenames:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            if path == root_file:
                continue
            rel = os.path.relpath(path, root_dir)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["main"], ["lib"]):
                continue
            files[tuple(rel)] = path
    return files


def module_of(files, path):
    for mod, f in files.items():
        if f == path:
            return mod
    return None


def resolve(files, here, path, reexports=None, depth=0):
    """The file that defines what `path` names (`crate::…`, `super::…`, `self::…`, a child
    module's `a::…`): the longest module prefix of the path, followed through that module's
    `pub use` when the next segment is an item it re-exports."""
    parts = path.split("::")
    if parts[0] == "crate":
        mod = []
        parts = parts[1:]
    elif parts[0] in ("super", "self"):
        mod = list(here)
        while parts and parts[0] in ("super", "self"):
            if parts[0] == "super":
                mod = mod[:-1]
            parts = parts[1:]
    elif tuple(here) + (parts[0],) in files:
        # A child module named from its parent (`api::router` in lib.rs).
        mod = list(here)
    else:
        return None
    best = files.get(tuple(mod))
    best_mod = tuple(mod)
    rest = list(parts)
    for p in parts:
        mod.append(p)
        if tuple(mod) in files:
            best = files[tuple(mod)]
            best_mod = tuple(mod)
            rest = rest[1:]
        else:
            break
    if reexports and rest and depth < 8 and best in reexports and rest[0] in reexports[best]:
        # An item re-exported from another crate is no import of the file that re-exports it.
        return resolve(files, best_mod, reexports[best][rest[0]], reexports, depth + 1)
    return best


def reexports_of(code):
    """Name -> path of each item a file re-exports (`pub use a::b::{C, D as E};`)."""
    out = {}
    for m in PUB_USE.finditer(code):
        for p in expand(m.group(1)):
            p = p.strip()
            if p.endswith("*"):
                continue
            path, _, alias = p.partition("@")
            name = alias or path.split("::")[-1]
            if name == "self":
                path = path[: -len("::self")]
                name = path.split("::")[-1]
            out[name] = path
    return out


PATH = re.compile(r"(?<![\w:])\w+(?:::\w+)+")
USE = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?use\s+(\w+::[^;]+);", re.S)
PUB_USE = re.compile(r"\bpub(?:\([^)]*\))?\s+use\s+(\w+::[^;]+);", re.S)


def graph(root_file):
    files = module_files(root_file)
    edges = {f: set() for f in files.values()}
    code = {f: strip(open(f, encoding="utf-8").read()) for f in files.values()}
    reexports = {f: reexports_of(c) for f, c in code.items()}
    for mod, f in files.items():
        paths = []
        # A re-export is a pass-through, not an import of the file that makes it: a use of
        # `crate::X` counts as an import of the file that defines X.
        for m in USE.finditer(PUB_USE.sub("", code[f])):
            paths += expand(m.group(1))
        paths += PATH.findall(USE.sub("", code[f]))
        for p in paths:
            p = p.partition("@")[0]
            target = resolve(files, mod, p, reexports)
            if target and target != f:
                edges[f].add(target)
    return edges


def circles(edges):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    meta = json.loads(
        subprocess.check_output(
            ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
            text=True,
        )
    )
    errors, by_name = crate_edges(meta)
    largest = 0
    for name, pkg in sorted(by_name.items()):
        for target in pkg["targets"]:
            if not set(target["kind"]) & {"lib", "bin", "proc-macro"}:
                continue
            src = target["src_path"]
            # A bin that is a single file beside the library's root shares no modules.
            if "bin" in target["kind"] and os.path.dirname(src).endswith("src"):
                continue
            for comp in circles(graph(src)):
                largest = max(largest, len(comp))
                if len(comp) > 2:
                    rel = [os.path.relpath(f) for f in comp]
                    errors.append(
                        f"{name}: an import circle of {len(comp)} files: " + ", ".join(rel)
                    )
    if errors:
        print("check-layers: the workspace's shape is broken:", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        sys.exit(1)
    print(
        f"check-layers: {len(by_name)} crates, dependencies point down; "
        f"largest import circle {largest} files (at most 2 allowed)"
    )


def self_test():
    """Each check against fixtures it must accept and fixtures it must refuse."""
    failures = []
    scratch = tempfile.TemporaryDirectory(prefix="check-layers-")

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: got {got!r}, want {want!r}")

    def meta(deps):
        names = sorted({n for pair in deps for n in pair[:2]})
        pkgs = [
            {
                "id": n,
                "name": n,
                "dependencies": [
                    {"name": b, "kind": k} for a, b, k in deps if a == n
                ],
            }
            for n in names
        ]
        return {"packages": pkgs, "workspace_members": names}

    ok, _ = crate_edges(meta([
        ("callsign-server", "callsign-storage", None),
        ("callsign-storage-sqlite", "callsign-storage-conformance", "dev"),
    ]))
    expect("edges that point down or (dev) sideways", ok, [])
    for deps in [
        [("callsign-storage", "callsign-server", None)],
        [("callsign-storage-sqlite", "callsign-storage-conformance", None)],
        [("callsign-storage-postgres", "callsign-storage-sqlite", "dev")],
        [("callsign-new", "callsign-core", None)],
    ]:
        errors, _ = crate_edges(meta(deps))
        expect(f"refused: {deps}", len(errors), 1)

    def crate(files):
        root = tempfile.mkdtemp(dir=scratch.name)
        for rel, text in files.items():
            path = os.path.join(root, "src", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return os.path.join(root, "src", "lib.rs")

    def sizes(lib):
        return sorted(len(c) for c in circles(graph(lib)))

    # a -> b (use), b -> c (super:: path in code), c -> a (through lib.rs's re-export).
    three = {
        "lib.rs": "mod a;\nmod b;\nmod c;\npub use a::Thing;\n",
        "a.rs": "use crate::b::helper;\npub struct Thing;\n",
        "b.rs": "pub fn helper() { super::c::run() }\n",
        "c.rs": "use crate::Thing;\npub fn run() {}\n",
    }
    expect("a 3-file circle through a use, a path and a re-export", sizes(crate(three)), [3])
    two = dict(three, **{"c.rs": "pub fn run() {}\n", "b.rs": "use crate::a::Thing;\npub fn helper() {}\n"})
    expect("a 2-file circle", sizes(crate(two)), [2])
    line = dict(three, **{"c.rs": "pub fn run() {}\n"})
    expect("no circle (a mod declaration is not an import)", sizes(crate(line)), [])
    commented = dict(three, **{"c.rs": "// use crate::Thing;\npub fn run() {}\n"})
    expect("an import in a comment does not count", sizes(crate(commented)), [])
    scratch.cleanup()
    if failures:
        print("check-layers --self-test failed:", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        sys.exit(1)
    print("check-layers --self-test: crate edges and import circles checked on fixtures")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    else:
        main()
