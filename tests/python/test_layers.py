"""The layer rule of docs/ARCHITECTURE.md, checked on every #include (scripts/layers.py reads
the document's table): the tree passes, and an include planted upward — a public header of a
higher layer, or an internal header of the tool — fails, naming the file and both layers; and
the same rule on the build's object files (layers.py --objects): a planted object that calls up
fails."""
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest
from conftest import SOURCE

spec = importlib.util.spec_from_file_location("layers", SOURCE / "scripts" / "layers.py")
layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(layers)


def test_every_include_of_the_tree_goes_down_or_stays_within():
    problems, table, n = layers.check(str(SOURCE))
    assert not problems, "\n".join(problems)
    assert {"util", "core", "check", "run", "fuzz", "cli"} <= set(table) and n > 100
    # the ground: status.h is util's, and util may use nothing
    assert "status.h" in table["util"][1] and layers.closure(table)["util"] == set()


def planted(path, line):
    text = (SOURCE / path).read_text() + line
    problems, _, _ = layers.check(str(SOURCE), extra=[(path, text)])
    return problems


def test_an_upward_public_include_fails():
    problems = planted("src/util/stash.c", '#include "gemmcheck/checker.h"\n')
    assert problems == ["src/util/stash.c: layer util includes gemmcheck/checker.h of layer check "
                        "(util may use: -)"], problems


def test_an_include_of_the_tool_from_the_library_fails():
    problems = planted("src/run/runner.c", '#include "campaign.h"\n')
    assert len(problems) == 1 and "layer run includes campaign.h of layer fuzz" in problems[0]


def test_a_sideways_include_fails_and_a_downward_one_passes():
    problems = planted("oracles/oracle_mpfr.c", '#include "gemmcheck/backend.h"\n')
    assert len(problems) == 1 and "of layer backends" in problems[0], problems
    assert planted("src/run/runner.c", '#include "gemmcheck/refgemm.h"\n') == []


def build_dir():
    binary = os.environ.get("GEMMCHECK_BINARY") or str(SOURCE / "build" / "gemmcheck")
    build = Path(binary).resolve().parent
    if not (build / "layer-objects" / "util.txt").exists():
        pytest.skip(f"no layer-objects listing in {build}: set GEMMCHECK_BINARY to a build's")
    return build


def test_every_symbol_of_the_build_comes_from_the_same_or_a_lower_layer():
    problems, n = layers.check_links(str(SOURCE), str(build_dir()))
    assert not problems, "\n".join(problems)
    assert n > 60


def test_an_upward_call_declared_by_hand_fails(tmp_path):
    """No include at all: util's object declares the checker's function itself and calls it;
    the link check sees the symbol and where it is defined."""
    src = tmp_path / "sneaky.c"
    src.write_text("int gck_check_values(void);\nint sneaky(void) { return gck_check_values(); }\n")
    obj = tmp_path / "sneaky.c.o"
    subprocess.run(["cc", "-c", str(src), "-o", str(obj)], check=True)
    problems, _ = layers.check_links(str(SOURCE), str(build_dir()), extra=[("util", str(obj))])
    assert len(problems) == 1, problems
    assert "layer util uses gck_check_values of layer check (util may use: -)" in problems[0]
    # the same call from the run layer, which may use check, passes
    problems, _ = layers.check_links(str(SOURCE), str(build_dir()), extra=[("run", str(obj))])
    assert problems == [], problems


def test_a_circle_among_a_layers_files_fails(tmp_path):
    """Two files of one layer that call each other (as report.c and html.c once did) fail; the
    same two with one call removed pass."""
    def obj(name, text):
        (tmp_path / f"{name}.c").write_text(text)
        subprocess.run(["cc", "-c", str(tmp_path / f"{name}.c"), "-o",
                        str(tmp_path / f"{name}.c.o")], check=True)
        return str(tmp_path / f"{name}.c.o")
    ping = obj("ping", "int gck_t_pong(int);\nint gck_t_ping(int n) { return gck_t_pong(n); }\n")
    pong = obj("pong", "int gck_t_ping(int);\nint gck_t_pong(int n) { return gck_t_ping(n); }\n")
    lone = obj("lone", "int gck_t_ping(int);\nint gck_t_lone(int n) { return gck_t_ping(n); }\n")
    problems, _ = layers.check_links(str(SOURCE), str(build_dir()),
                                     extra=[("fuzz", ping), ("fuzz", pong)])
    assert len(problems) == 1 and problems[0].startswith("layer fuzz: a circle among its files:")
    assert "ping.c" in problems[0] and "pong.c" in problems[0], problems
    problems, _ = layers.check_links(str(SOURCE), str(build_dir()),
                                     extra=[("fuzz", lone), ("fuzz", pong)])
    assert problems == [], problems


def test_an_include_outside_a_headers_scope_fails():
    """check_internal.h is private to src/check/: the run layer may use the check layer, but not
    that header; a header without a scope line, or with a guard of another style, fails."""
    problems = planted("src/run/runner.c", '#include "check_internal.h"\n')
    assert problems == ["src/run/runner.c: includes check_internal.h, which is private to "
                        "src/check/ (src/check/check_internal.h)"], problems
    text = (SOURCE / "src/run/wire.h").read_text()
    unscoped = text.replace("(internal:", "(inside:", 1)
    problems, _, _ = layers.check(str(SOURCE), extra=[("src/run/wire.h", unscoped)])
    assert len(problems) == 1 and problems[0].startswith("src/run/wire.h: no scope"), problems
    renamed = text.replace("GEMMCHECK_RUN_WIRE_H", "GCK_WIRE_H")
    problems, _, _ = layers.check(str(SOURCE), extra=[("src/run/wire.h", renamed)])
    assert problems == ["src/run/wire.h: include guard GCK_WIRE_H, not GEMMCHECK_RUN_WIRE_H"]
