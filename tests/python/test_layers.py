"""The layer rule of docs/ARCHITECTURE.md, checked on every #include (scripts/layers.py reads
the document's table): the tree passes, and an include planted upward — a public header of a
higher layer, or an internal header of the tool — fails, naming the file and both layers."""
import importlib.util

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
