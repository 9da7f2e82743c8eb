#!/usr/bin/env python3
"""The layer rule, checked on every #include: a file may include headers of its own layer and
of the layers below it, never of a layer above or beside it. The layers, the public headers each
one owns and what each may use are the table of docs/ARCHITECTURE.md ("| layer | CMake target |
public headers | may use |"): this script reads them from there, so the document and the check
cannot drift apart. "may use" is closed transitively (a layer may use what the layers it uses
may use); words in it that name no layer (MPFR, dl, jansson, ...) are libraries, not checked
here.

    scripts/layers.py [ROOT]      exit 0 and a summary line, or 1 and one line per violation

tests/python/test_layers.py runs it on the tree and on a tree with a planted upward include."""
import os
import re
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
        for f in folders:
            layers[layer_name(f)] = (f, headers, [u for u in uses if u and u != "—"])
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
                text = fh.read()
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
    return problems, layers, len(texts)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    problems, layers, n = check(root)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"layers: {n} files of {len(layers)} layers, every #include downward or within")
    return 0


if __name__ == "__main__":
    sys.exit(main())
