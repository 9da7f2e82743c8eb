#!/usr/bin/env python3
"""The layer rule, checked on every #include: a file may include headers of its own layer and
of the layers below it, never of a layer above or beside it. The layers, the public headers each
one owns and what each may use are the table of docs/ARCHITECTURE.md ("| layer | CMake target |
public headers | may use |"): this script reads them from there, so the document and the check
cannot drift apart. "may use" is closed transitively (a layer may use what the layers it uses
may use); words in it that name no layer (MPFR, dl, jansson, ...) are libraries, not checked
here.

The same rule is checked where the linker sees it: with --objects BUILD, every symbol an
object file of a layer takes from another layer's objects (nm's undefined symbols, matched to
the objects that define them; each layer is the object library gck_LAYER, whose objects CMake
lists in BUILD/layer-objects/LAYER.txt) must be defined in a layer it may use. An include can
be dodged by declaring a function by hand; a call cannot. Within a layer, files that take
symbols from each other round a circle are a violation too (CIRCLES_ALLOWED lists the one pair
that does by design, with its reason).

    scripts/layers.py [ROOT] [--objects BUILD]
                                  exit 0 and a summary line, or 1 and one line per violation

Every internal header says in its first comment who may include it ("(internal: private to
D/)" or "(internal: for D/ and E/, ...)"), and its include guard is GEMMCHECK_LAYER_NAME_H;
both are checked.

tests/python/test_layers.py runs it on the tree and on a tree with a planted upward include,
and on the build with a planted upward call."""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def layer_name(folder):
    return folder.rstrip("/").split("/")[-1]


def read_table(root):
    """{layer: (folders, public headers, may-use names)} from ARCHITECTURE.md's table."""
    text = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    head = text.index("| layer | CMake target | public headers | may use |")
    layers = {}
    for line in text[head:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        folders = re.findall(r"`([\w/]+/)`", cells[0])
        headers = re.findall(r"`([\w.]+\.h)`", cells[2])
        uses = [u.strip().split(" ")[0] for u in re.sub(r"\([^)]*\)", "", cells[3]).split(",")]
        targets = re.findall(r"`(gck_\w+)`", cells[1])
        for f in folders:
            name = layer_name(f)
            if targets != [f"gck_{name}"]:
                raise SystemExit(f"docs/ARCHITECTURE.md: layer {name}'s CMake target is "
                                 f"{targets}, not gck_{name}")
            layers[name] = (f, headers, [u for u in uses if u and u != "—"])
    return layers


def closure(layers):
    allowed = {}

    def below(name, seen):
        for u in layers[name][2]:
            if u in layers and u not in seen:
                seen.add(u)
                below(u, seen)
        return seen
    for name in layers:
        allowed[name] = below(name, set())
    return allowed


def source_files(root, layers):
    """(path relative to root, its layer) of every C file of a layer and every public header."""
    out = []
    for name, (folder, headers, _) in layers.items():
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            rel = os.path.relpath(dirpath, root)
            # a nested folder that is a layer of its own (none today) would be walked twice
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    out.append((os.path.join(rel, f), name))
        for h in headers:  # version.h is made from version.h.in at configure time
            path = os.path.join("include", "gemmcheck", h)
            if not os.path.exists(os.path.join(root, path)):
                path += ".in"
            out.append((path, name))
    return out


def check(root, extra=()):
    """The violations (strings) of the tree at root; `extra` adds (path, text) pairs as if
    they were files of the tree (the planted include of the test)."""
    layers = read_table(root)
    allowed = closure(layers)
    public = {h: name for name, (_, hs, _) in layers.items() for h in hs}
    problems = []
    present = {f for f in os.listdir(os.path.join(root, "include", "gemmcheck"))
               if f.endswith(".h") or f.endswith(".h.in")}
    for f in sorted(present):
        h = f[:-3] if f.endswith(".in") else f
        if h not in public:
            problems.append(f"include/gemmcheck/{f}: in no layer's public headers (the table)")
    files = source_files(root, layers)
    owner = {}  # header basename -> layers that hold one
    for path, name in files:
        if not path.startswith("include"):
            owner.setdefault(os.path.basename(path), set()).add(name)
    texts = {path: None for path, _ in files}
    texts.update(dict(extra))
    layer_of = dict(files)
    for path, text in texts.items():
        name = layer_of[path]
        if text is None and not os.path.exists(os.path.join(root, path)):
            problems.append(f"{path}: named by the table, not in the tree")
            continue
        if text is None:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
                text = texts[path] = fh.read()  # kept for the scope check below
        for inc in INCLUDE.findall(text):
            if inc.startswith("gemmcheck/"):
                target = public.get(inc.split("/", 1)[1])
                if target is None:
                    problems.append(f"{path}: includes {inc}, which no layer owns")
                    continue
            elif inc in owner:
                holders = owner[inc]
                target = name if name in holders else (next(iter(holders))
                                                        if len(holders) == 1 else None)
                if target is None:
                    problems.append(f"{path}: includes {inc}, held by {sorted(holders)}")
                    continue
            else:
                continue  # a system or third-party header
            if target != name and target not in allowed[name]:
                problems.append(f"{path}: layer {name} includes {inc} of layer {target} "
                                f"({name} may use: {', '.join(sorted(allowed[name])) or '-'})")
    full = {path: text for path, text in texts.items() if text is not None}
    problems += check_scopes(layers, allowed, [f for f in files if f[0] in full], full)
    return problems, layers, len(texts)


def layer_objects(build, layers):
    """{layer: [object files]} of the build's object libraries, as CMake lists them in
    BUILD/layer-objects/LAYER.txt; a layer without objects is an error of the table or of the
    build (returned as the second value)."""
    found, missing = {}, []
    for name in layers:
        listing = os.path.join(build, "layer-objects", f"{name}.txt")
        objs = []
        if os.path.exists(listing):
            objs = [line.strip() for line in open(listing, encoding="utf-8") if line.strip()]
        absent = [o for o in objs if not os.path.exists(o)]
        if objs and not absent:
            found[name] = sorted(objs)
        else:
            missing.append(f"{listing}: no object files of layer {name}"
                           + (f" ({absent[0]} not built)" if absent else ""))
    return found, missing


def symbols(objects):
    """{object: (defined global symbols, undefined symbols)} as nm reads them."""
    out = subprocess.run(["nm", "-A", "-P", *objects], check=True, capture_output=True,
                         text=True).stdout
    table = {o: (set(), set()) for o in objects}
    for line in out.splitlines():
        where, _, rest = line.rpartition(": ")
        parts = rest.split()
        if len(parts) < 2 or where not in table:
            continue
        sym, kind = parts[0], parts[1]
        if kind == "U":
            table[where][1].add(sym)
        elif kind.isupper() or kind in "vw":
            table[where][0].add(sym)
    return table


# Files of one layer that take symbols from each other, both ways, by design (each pair with its
# reason); any other circle among a layer's files is a violation.
CIRCLES_ALLOWED = {
    # the registry opens a backend the process defined at run time (the Python module's
    # workers), and defining one checks its name and table against the registry's
    frozenset({"src/backends/backends.c", "src/backends/defined.c"}),
}


def source_of(obj, build):
    """src/run/runner.c for BUILD/CMakeFiles/gck_run.dir/src/run/runner.c.o."""
    rel = os.path.relpath(obj, build)
    parts = rel.split(os.sep)
    if len(parts) > 2 and parts[0] == "CMakeFiles":
        rel = os.path.join(*parts[2:])
    return rel[:-2] if rel.endswith(".o") else rel


def reach_from(edges, start):
    """The files `start` takes symbols from, directly or through others."""
    seen, stack = set(), [start]
    while stack:
        for nxt in edges[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def circles(objects, table, build):
    """Violations: files of one layer that reach themselves through the symbols they take from
    the layer's other files (a circle), outside CIRCLES_ALLOWED."""
    problems = []
    for name, objs in sorted(objects.items()):
        defs = {s: o for o in objs for s in table[o][0]}
        edges = {o: {defs[u] for u in table[o][1] if u in defs and defs[u] != o} for o in objs}
        reach = {o: reach_from(edges, o) for o in objs}
        for o in objs:
            if o not in reach[o]:
                continue
            ring = frozenset(source_of(x, build) for x in objs if x in reach[o] and o in reach[x])
            msg = f"layer {name}: a circle among its files: {', '.join(sorted(ring))}"
            if ring not in CIRCLES_ALLOWED and msg not in problems:
                problems.append(msg)
    return problems


def check_links(root, build, extra=()):
    """The violations of the build's objects; `extra` adds (layer, object file) pairs (the
    planted call of the test). Returns (problems, number of objects)."""
    layers = read_table(root)
    allowed = closure(layers)
    objects, problems = layer_objects(build, layers)
    for name, obj in extra:
        objects.setdefault(name, []).append(obj)
    layer_of = {o: name for name, objs in objects.items() for o in objs}
    table = symbols(sorted(layer_of))
    definer = {}
    for obj, (defined, _) in table.items():
        for sym in defined:
            definer.setdefault(sym, set()).add(layer_of[obj])
    for obj, (_, undefined) in sorted(table.items()):
        name = layer_of[obj]
        for sym in sorted(undefined):
            owners = definer.get(sym, set())
            if not owners or name in owners:
                continue  # a library outside gemmcheck, or its own layer's
            bad = sorted(t for t in owners if t not in allowed[name])
            if bad and len(bad) == len(owners):
                rel = os.path.relpath(obj, build)
                problems.append(f"{rel}: layer {name} uses {sym} of layer {bad[0]} "
                                f"({name} may use: {', '.join(sorted(allowed[name])) or '-'})")
    problems += circles(objects, table, build)
    return problems, len(table)


SCOPE = re.compile(r"\(internal: (private to ([\w/]+/)|for ([\w/]+/) and ([^)]*))\)")
GUARD = re.compile(r"#ifndef (\w+)\n#define \1\n")


def check_scopes(layers, allowed_below, files, texts):
    """Every internal header (a .h of a layer's folder) says who may include it, in its first
    comment: "(internal: private to D/)" or "(internal: for D/ and E/, F/)"; every file of the
    layers that includes it is in those folders. Its include guard is GEMMCHECK_LAYER_NAME_H
    (a header without a guard, included several times by design, has none to check)."""
    problems = []
    folder_of = {name: folder for name, (folder, _, _) in layers.items()}
    layer_of = dict(files)
    includers = {}
    for path, text in texts.items():
        for inc in INCLUDE.findall(text):
            includers.setdefault(os.path.basename(inc), set()).add(path)
    for path, name in files:
        if not path.endswith(".h") or path.startswith("include"):
            continue
        text = texts[path]
        first = re.match(r"/\*.*?\*/", text, re.S)
        m = SCOPE.search(re.sub(r"\s*\n\s*\*\s*", " ", first.group(0))) if first else None
        if not m:
            problems.append(f"{path}: no scope in its first comment (\"(internal: private to "
                            f"{folder_of[name]})\" or \"(internal: for {folder_of[name]} and ...)\")")
            continue
        allowed = {m.group(2) or m.group(3)}
        if m.group(4):
            allowed |= {w.strip() for w in m.group(4).split(",")}
        for user in sorted(includers.get(os.path.basename(path), ())):
            folder = folder_of[layer_of[user]]
            upward = layer_of[user] != name and name not in allowed_below[layer_of[user]]
            if user != path and folder not in allowed and not upward:  # upward: said above
                problems.append(f"{user}: includes {os.path.basename(path)}, which is "
                                f"{m.group(1)} ({path})")
        g = GUARD.search(text)
        want = "GEMMCHECK_" + name.upper() + "_" + re.sub(r"\W", "_", os.path.basename(
            path)[:-2]).upper() + "_H"
        if g and g.group(1) != want:
            problems.append(f"{path}: include guard {g.group(1)}, not {want}")
    return problems


def main():
    args = sys.argv[1:]
    build = None
    if "--objects" in args:
        i = args.index("--objects")
        if i + 1 >= len(args):
            print("layers.py: --objects needs the build folder")
            return 2
        build = args[i + 1]
        del args[i:i + 2]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems, layers, n = check(root)
    nobj = 0
    if build:
        link_problems, nobj = check_links(root, build)
        problems += link_problems
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"layers: {n} files of {len(layers)} layers, every #include downward or within and "
          "within its header's scope, every guard named for its layer"
          + (f"; {nobj} object files, every symbol taken from the same or a lower layer, "
             "no circle among a layer's files"
             if build else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
