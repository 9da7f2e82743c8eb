"""The reports CI tools read, from a real campaign with an unavailable backend (cublas: no GPU on
these machines, or CUDA not built), a backend library that does not exist, a correct backend
(ref) and an injected fault (the faulty test backend's `tolerance` mode):

- the JUnit file parses with a strict parser, validates against docs/junit.xsd, and holds one
  test case per type tuple each backend declares (read from `gemmcheck backends --rows`), one
  skipped test case with the reason for each backend that could not run, counts that add up,
  and one <failure> per failing test case whose body has the worst element, error and bound;
- the JSON report validates against docs/report.schema.json, and its causes group hundreds of
  findings into a handful, each with a smallest reproducer that `repro` confirms;
- the CSV files parse as RFC 4180 and agree with the JSON;
- text that is not UTF-8 (a backend path) leaves every report valid.
"""

import csv
import json
import math
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from conftest import SOURCE

FAULTY = os.environ.get("GEMMCHECK_FAULTY_PLUGIN", "")
MISSING = "cblas:/nonexistent/libcblas.so"


def run(binary, args, cwd, expect=(0, 1)):
    r = subprocess.run([binary] + args, cwd=cwd, capture_output=True, timeout=300)
    assert r.returncode in expect, f"exit {r.returncode}\n{r.stdout.decode()}\n{r.stderr.decode()}"
    return r


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, gemmcheck_binary):
    if not FAULTY:
        pytest.fail("GEMMCHECK_FAULTY_PLUGIN is not set (ctest sets it)")
    d = tmp_path_factory.mktemp("reports")
    faulty = f"plugin:{FAULTY}:tolerance"
    args = ["fuzz", "--backend", "ref", "--backend", "cublas", "--backend", faulty,
            "--backend", MISSING, "--skip-unavailable", "--time", "8", "--seed", "5",
            "--report", "r.json", "--junit", "j.xml", "--matrix-csv", "m.csv",
            "--backends-csv", "b.csv", "--no-progress"]
    r = run(gemmcheck_binary, args, d, expect=(1,))
    return {"dir": d, "faulty": faulty, "stdout": r.stdout.decode(),
            "report": json.loads((d / "r.json").read_text()),
            "junit": ET.parse(d / "j.xml").getroot()}  # expat: a strict XML parser


def declared_tuples(binary, spec):
    """The type tuples of a backend's support table, as `gemmcheck backends --rows` prints
    them ("f16  f16  f32  f32  | f32  | ...")."""
    out = subprocess.run([binary, "backends", "--rows", spec], capture_output=True, text=True,
                         check=True).stdout
    rows = re.findall(r"^\s+(\w+)\s+(\w+)\s+(\w+)\s+(\w+)\s+\|\s+(\w+)\s+\|", out, re.M)
    assert rows, out
    return {f"{a},{b},{c},{d}:{comp}" for a, b, c, d, comp in rows}


def suites(junit):
    return {s.get("name"): s for s in junit.findall("testsuite")}


def test_junit_validates_against_the_schema(campaign):
    xsd = SOURCE / "docs" / "junit.xsd"
    path = campaign["dir"] / "j.xml"
    r = subprocess.run(["xmllint", "--noout", "--schema", str(xsd), str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    # the schema has teeth: a second <failure> in a test case is refused
    text = path.read_text()
    i = text.index("</failure>") + len("</failure>")
    j = text.rindex("<failure", 0, i)
    bad = campaign["dir"] / "two-failures.xml"
    bad.write_text(text[:i] + text[j:i] + text[i:])
    r = subprocess.run(["xmllint", "--noout", "--schema", str(xsd), str(bad)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "failure" in r.stderr


def test_one_test_case_per_declared_tuple(campaign, gemmcheck_binary):
    s = suites(campaign["junit"])
    assert set(s) == {"ref", "cublas", campaign["faulty"], MISSING}
    for spec in ("ref", campaign["faulty"]):
        names = [t.get("name") for t in s[spec].findall("testcase")]
        assert len(names) == len(set(names)), f"{spec}: a tuple twice"
        declared = declared_tuples(gemmcheck_binary, spec)
        own = set(names) - {"(declared tuples no case reached)"}
        assert own <= declared, spec
        if own != declared:  # a campaign too short to reach every tuple: one summary case
            summary = [t for t in s[spec].findall("testcase")
                       if t.get("name") == "(declared tuples no case reached)"]
            msg = summary[0].find("skipped").get("message")
            assert msg.startswith(f"{len(declared) - len(own)} of {len(declared)} declared"), msg
        assert all(t.get("classname") == spec for t in s[spec].findall("testcase"))
    for spec in ("cublas", MISSING):
        cases = s[spec].findall("testcase")
        assert len(cases) == 1 and cases[0].get("name") == "(backend)", spec
        msg = cases[0].find("skipped").get("message")
        assert spec.split(":")[0] in msg or "cannot" in msg or "unavailable" in msg, msg
        status = {p.get("name"): p.get("value") for p in s[spec].iter("property")}["status"]
        assert status.startswith("skipped: "), status


def test_counts_add_up(campaign):
    junit = campaign["junit"]
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for suite in junit.findall("testsuite"):
        cases = suite.findall("testcase")
        failing = [t for t in cases if t.find("failure") is not None]
        skipped = [t for t in cases if t.find("skipped") is not None]
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == len(failing)
        assert int(suite.get("skipped")) == len(skipped)
        assert suite.get("errors") == "0"
        assert all(len(t.findall("failure")) + len(t.findall("skipped")) <= 1 for t in cases)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp"))
        assert suite.get("hostname")
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert props["seed"] == "5" and props["shard"] == "1/1" and props["gemmcheck"]
        for k in totals:
            totals[k] += int(suite.get(k))
        times = [float(t.get("time")) for t in cases]
        assert all(t >= 0 for t in times)
        # per-tuple times are worker time: at most the suite's time on each of the two jobs
        assert sum(times) <= 2 * float(suite.get("time")) + 1.0
    for k, v in totals.items():
        assert int(junit.get(k)) == v, k
    s = suites(junit)
    assert s["ref"].get("failures") == "0" and int(s["ref"].get("tests")) > 100
    ran = [float(t.get("time")) for t in s["ref"].findall("testcase") if t.find("skipped") is None]
    assert ran and sum(ran) > 0


def test_each_failure_shows_worst_element_error_and_bound(campaign):
    failing = [t for t in suites(campaign["junit"])[campaign["faulty"]].findall("testcase")
               if t.find("failure") is not None]
    assert len(failing) > 20
    for t in failing:
        f = t.find("failure")
        assert f.get("type") in ("out_of_tolerance", "nonfinite_mismatch", "improbable_error"), \
            f.get("type")
        assert f.get("message").startswith(f.get("type")), f.get("message")
        body = f.text
        assert "reproduce: gemmcheck repro --backend" in body, body
        m = re.search(r"worst element: D\[batch \d+\]\[\d+,\d+\] = (\S+), exact (\S+), "
                      r"error (\S+), bound (\S+), error/bound (\S+)", body)
        assert m, body
        if f.get("type") == "out_of_tolerance":
            assert float(m.group(3)) > float(m.group(4)), body  # the error exceeds the bound
        elif f.get("type") == "improbable_error":  # inside the hard bound, beyond the tier
            assert float(m.group(3)) <= float(m.group(4)), body
        else:  # a NaN or Inf where the exact result is finite: no finite error to compare
            got, exact = float(m.group(1)), float(m.group(2))
            assert math.isfinite(exact) != math.isfinite(got) or math.isnan(got), body
        assert re.search(r"cause \d+ of \d+ of the campaign", body), body
        types, compute = t.get("name").split(":")
        assert f"types={types} compute={compute} " in body, body


def test_findings_are_grouped_by_cause(campaign, gemmcheck_binary):
    rep = campaign["report"]
    causes, findings = rep["causes"], rep["findings"]
    assert len(findings) > 50 and 1 <= len(causes) <= 5, (len(findings), len(causes))
    assert sum(c["findings"] for c in causes) == len(findings)
    assert sum(c["cases"] for c in causes) == sum(f["count"] for f in findings)
    by_cause = {}
    for f in findings:
        rule = f.get("worst", {}).get("rule", "")
        by_cause.setdefault((f["backend"], f["kind"], rule), []).append(f)
    assert len(by_cause) == len(causes)
    for c in causes:
        members = by_cause[(c["backend"], c["kind"], c["rule"])]
        assert c["findings"] == len(members)
        assert c["tuples"] == len({f["signature"].split("|")[-2] for f in members})
        assert c["shapes"] == len({f["signature"].split("|")[-1] for f in members})
        assert min(f["cost"] for f in members) == next(
            f["cost"] for f in members if f["case"] == c["case"])
    # the summary leads with the causes, one reproducer each
    out = campaign["stdout"]
    assert f"{len(findings)} distinct findings from {len(causes)} cause" in out, out
    assert out.count("smallest:") == len(causes)
    # the first cause's smallest reproducer reproduces the finding
    case = causes[0]["case"]
    r = subprocess.run([gemmcheck_binary, "repro", "--backend", campaign["faulty"], case],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and causes[0]["kind"] in r.stdout, r.stdout + r.stderr


def test_json_report_validates_against_its_schema(campaign):
    schema = json.loads((SOURCE / "docs" / "report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    rep = campaign["report"]
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    env = rep["environment"]
    assert rep["schema_version"] == 4
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", env["timestamp"])
    assert env["host"] and env["gemmcheck_commit"] and "variables" in env
    assert set(env["variables"]) >= {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_NUM_THREADS"}
    if Path("/proc/cpuinfo").exists() and " avx2 " in Path("/proc/cpuinfo").read_text():
        assert "avx2" in env["cpu_flags"].split()
    assert rep["shard_environments"][0]["shard"] == "1/1"
    matrix = rep["summary"]["support_matrix"]
    assert all(e["fuzzed"] for e in matrix)  # no --types: every declared tuple is fuzzed
    assert sum(e["seconds"] for e in matrix if e["backend"] == "ref") > 0


def test_tuples_left_out_by_types_are_one_skipped_case_with_the_reason(tmp_path,
                                                                        gemmcheck_binary):
    run(gemmcheck_binary, ["fuzz", "--backend", "ref", "--types", "f32,f32,f32,f32:f32",
                           "--time", "1", "--report", "r.json", "--junit", "j.xml",
                           "--no-progress"], tmp_path, expect=(0,))
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    cases = {t.get("name"): t for t in suite.findall("testcase")}
    assert set(cases) == {"f32,f32,f32,f32:f32", "(declared tuples left out by --types)"}
    t = cases["f32,f32,f32,f32:f32"]
    assert t.find("skipped") is None and float(t.get("time")) > 0
    n = len(declared_tuples(gemmcheck_binary, "ref"))
    msg = cases["(declared tuples left out by --types)"].find("skipped").get("message")
    assert msg.startswith(f"{n - 1} of {n} declared tuples left out by the campaign's --types")
    assert suite.get("tests") == "2" and suite.get("skipped") == "1"
    matrix = json.loads((tmp_path / "r.json").read_text())["summary"]["support_matrix"]
    assert [e["types"] + ":" + e["compute"] for e in matrix if e["fuzzed"]] == [
        "f32,f32,f32,f32:f32"]


def test_the_junit_test_set_does_not_depend_on_the_seed(tmp_path, gemmcheck_binary):
    """The generator takes the declared tuples in turn: any run of as many cases as the backend
    declares tuples has one test case per tuple, whatever the seed; a shorter one has the tuples
    it reached (from a tuple the seed picks: nightly short runs cover the table over the nights)
    and one summary test case that counts the others."""
    n = len(declared_tuples(gemmcheck_binary, "ref"))

    def test_set(seed, cases):
        d = tmp_path / f"s{seed}-{cases}"
        d.mkdir()
        run(gemmcheck_binary, ["fuzz", "--backend", "ref", "--cases", str(cases), "--seed",
                               str(seed), "--junit", "j.xml", "--no-progress"], d, expect=(0,))
        suite = ET.parse(d / "j.xml").getroot().find("testsuite")
        return {t.get("name"): t for t in suite.findall("testcase")}, suite

    for seed in (1, 2, 3):  # the 64 edge cases a campaign starts with, then n of the stream
        cases, suite = test_set(seed, n + 64)
        assert set(cases) == declared_tuples(gemmcheck_binary, "ref"), seed
        assert suite.get("skipped") == "0" and int(suite.get("tests")) == n
    short = [test_set(seed, n // 4) for seed in (4, 5)]
    for cases, suite in short:
        reached = set(cases) - {"(declared tuples no case reached)"}
        assert len(reached) >= n // 4 - 64, len(reached)  # the edge cases: the first 11 tuples
        msg = cases["(declared tuples no case reached)"].find("skipped").get("message")
        assert msg.startswith(f"{n - len(reached)} of {n} declared tuples"), msg
        assert suite.get("skipped") == "1"


def test_csv_files_agree_with_the_report(campaign):
    d, rep = campaign["dir"], campaign["report"]
    with open(d / "m.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    matrix = rep["summary"]["support_matrix"]
    assert len(rows) == len(matrix)
    for row, e in zip(rows, matrix):
        assert row["backend"] == e["backend"]
        assert ",".join((row["a"], row["b"], row["c"], row["d"])) == e["types"]
        assert row["compute"] == e["compute"]
        assert (int(row["pass"]), int(row["fail"])) == (e["pass"], e["fail"])
        assert row["status"] == ("fail" if e["fail"] else "pass" if e["pass"] else
                                 "unsupported" if e["unsupported"] else "not reached")
    with open(d / "b.csv", newline="") as f:
        brows = list(csv.DictReader(f))
    bes = rep["environment"]["backends"]
    assert [b["backend"] for b in brows] == [b["backend"] for b in bes]
    for row, b in zip(brows, bes):
        assert row["status"] == b["status"] and int(row["cases"]) == b["cases"]
    faulty = next(b for b in brows if b["backend"] == campaign["faulty"])
    assert int(faulty["tuples_failing"]) > 0 and int(faulty["distinct_findings"]) == len(
        [f for f in rep["findings"] if f["backend"] == campaign["faulty"]])


def test_merged_shards_keep_one_test_case_per_tuple(tmp_path, gemmcheck_binary):
    for i in (1, 2):
        # 400 cases each: the two shards' streams together reach every one of the 560 tuples
        run(gemmcheck_binary, ["fuzz", "--backend", "ref", "--cases", "400", "--seed", "9",
                               "--shard", f"{i}/2", "--report", f"s{i}.json", "--no-progress"],
            tmp_path, expect=(0,))
    run(gemmcheck_binary, ["merge", "--report", "m.json", "--junit", "m.xml", "--matrix-csv",
                           "m.csv", "s1.json", "s2.json"], tmp_path, expect=(0,))
    suite = ET.parse(tmp_path / "m.xml").getroot().find("testsuite")
    names = [t.get("name") for t in suite.findall("testcase")]
    assert len(names) == len(set(names)) == len(declared_tuples(gemmcheck_binary, "ref"))
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["shard"] == "2 shards merged" and props["seed"] == "9"
    m = json.loads((tmp_path / "m.json").read_text())
    assert [e["shard"] for e in m["shard_environments"]] == ["1/2", "2/2"]
    schema = json.loads((SOURCE / "docs" / "report.schema.json").read_text())
    jsonschema.validate(m, schema, cls=jsonschema.Draft202012Validator)


def test_text_that_is_not_utf8_leaves_the_reports_valid(tmp_path, gemmcheck_binary):
    bad = b"cblas:/nonexistent/\xff\xfe<&>\x01.so"
    args = [b"fuzz", b"--backend", b"ref", b"--backend", bad, b"--skip-unavailable", b"--time",
            b"1", b"--report", b"r.json", b"--junit", b"j.xml", b"--backends-csv", b"b.csv",
            b"--no-progress"]
    r = subprocess.run([os.fsencode(gemmcheck_binary)] + args, cwd=tmp_path,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "r.json").read_bytes().decode("utf-8"))
    names = [b["backend"] for b in rep["environment"]["backends"]]
    assert "cblas:/nonexistent/\\xff\\xfe<&>\\x01.so" in names, names
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert "cblas:/nonexistent/\\xff\\xfe<&>\\x01.so" in [s.get("name") for s in
                                                        root.findall("testsuite")]
    xsd = SOURCE / "docs" / "junit.xsd"
    v = subprocess.run(["xmllint", "--noout", "--schema", str(xsd), str(tmp_path / "j.xml")],
                       capture_output=True, text=True)
    assert v.returncode == 0, v.stderr
    (tmp_path / "b.csv").read_bytes().decode("utf-8")
