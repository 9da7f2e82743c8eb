"""Known findings (fuzz/merge --known FILE, --baseline REPORT; docs/KNOWN.md), with the faulty
test backends (tests/faulty_backends.c):

- a covered finding is reported as known with its reference, in the summary, the JSON report
  (valid against docs/report.schema.json), the JUnit XML (valid against docs/junit.xsd, the
  tuple passing) and the HTML page's banner, and the run exits 0;
- an `overread` entry accepts a crash only when the case passes without guard pages: the
  `overread` mode (a read past B, as BLIS 0.9.0's) is accepted, the `segv` mode (a crash
  anywhere) is not, and the run fails;
- a crash whose case shows a numeric deviation once it has room (`overtol`) is known only when
  another entry covers that deviation;
- what that condition rests on: without guard pages an operand ends 64 of its widest lines
  before its guard page, so a read one whole line past it (the `lineread` mode) passes there and
  crashes with guard pages;
- an entry that covered nothing for a backend that ran is stale; one for a backend that did
  not run is not;
- a malformed file is one line naming FILE:LINE and exit 2;
- a baseline report covers its own causes, not new ones;
- merge keeps a finding known only when every shard that found it marked it known.
"""

import json
import os
import subprocess
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from conftest import SOURCE

FAULTY = os.environ.get("GEMMCHECK_FAULTY_PLUGIN", "")
CASES = ["--cases", "60", "--jobs", "1", "--no-progress", "--rerun-share", "0",
         "--concurrency-share", "0"]


@pytest.fixture(scope="module")
def faulty():
    if not FAULTY:
        pytest.fail("GEMMCHECK_FAULTY_PLUGIN is not set (ctest sets it)")
    return FAULTY


def fuzz(binary, cwd, mode, *extra, seed=7):
    args = [binary, "fuzz", "--backend", f"plugin:{FAULTY}:{mode}", "--seed", str(seed), *CASES,
            *extra]
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_without_guard_pages_a_read_one_line_past_an_operand_lands_in_its_slack(
        gemmcheck_binary, tmp_path, faulty):
    # The `lineread` mode reads one line of B (ldb = 1100 f32 elements, 4,400 bytes) past its
    # last element, as BLIS 0.9.0's edge tile read 4,216 bytes past A. With guard pages that is a
    # crash; --no-guard-page ends each operand 64 lines of the widest leading dimension before
    # its guard page (not 4 KiB alone: with this B's 196 bytes of alignment the read would still
    # reach the guard page), so the same case then passes. The known files' `overread`
    # condition and the grid's BLIS rule rest on that.
    case = ("gck1 m=4 n=2 k=3 order=col ta=N tb=N types=f32,f32,f32,f32 compute=f32 scale=f32 "
            "alpha=1 beta=0 lda=4 ldb=1100 ldc=4 ldd=4 d=c batch=1 sa=0 sb=0 sc=0 sd=0 "
            "off=0,0,0,0 vab=int vc=int sp=0 cnan=0 seed=1")
    base = [gemmcheck_binary, "repro", "--backend", f"plugin:{faulty}:lineread"]
    r = subprocess.run([*base, case], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "verdict:  FINDINGS: crash" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([*base, "--no-guard-page", case], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "verdict:  pass" in r.stdout, r.stdout + r.stderr


def known_file(tmp_path, *lines):
    p = tmp_path / "known.txt"
    p.write_text("# a test's known findings\n\n" + "\n".join(lines) + "\n")
    return str(p)


def test_a_covered_overread_passes_everywhere_it_is_reported(gemmcheck_binary, tmp_path,
                                                            faulty):
    k = known_file(tmp_path, r"plugin:.*:overread  crash  rule=^signal\s11$  overread  "
                             "see=docs/DEVIATIONS.md#blis-overread",
                   r"plugin:.*:overread  out_of_tolerance  see=nowhere#stale",
                   r"openblas  crash  see=not-run#here")
    r = fuzz(gemmcheck_binary, tmp_path, "overread", "--known", k, "--report", "r.json",
             "--junit", "j.xml", "--html", "p.html")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((tmp_path / "r.json").read_text())
    schema = json.loads((SOURCE / "docs" / "report.schema.json").read_text())
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    s = rep["summary"]
    assert s["distinct_findings"] > 0 and s["known_findings"] == s["distinct_findings"], s
    assert all(f["known"] == "docs/DEVIATIONS.md#blis-overread" for f in rep["findings"])
    assert all(c["known"] == "docs/DEVIATIONS.md#blis-overread" for c in rep["causes"])
    # stale: the out_of_tolerance entry (its backend ran), not the openblas one (it did not)
    assert len(s["stale_known"]) == 1 and "known.txt:4:" in s["stale_known"][0], s["stale_known"]
    assert "known (docs/DEVIATIONS.md#blis-overread): crash" in r.stdout
    assert "known entries that covered nothing in this run:" in r.stdout
    assert r.stdout.rstrip().splitlines()[-1].startswith("PASS: known deviations only")
    # JUnit: valid, no failure, the known finding named in the tuple's system-out
    v = subprocess.run(["xmllint", "--noout", "--schema", str(SOURCE / "docs" / "junit.xsd"),
                        str(tmp_path / "j.xml")], capture_output=True, text=True)
    assert v.returncode == 0, v.stderr
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert not root.findall(".//failure")
    assert int(root.find("testsuite").get("failures")) == 0
    outs = [e.text for e in root.findall(".//testcase/system-out")]
    assert outs and all("known crash (docs/DEVIATIONS.md#blis-overread)" in t for t in outs)
    page = (tmp_path / "p.html").read_text()
    assert "PASS: known deviations only" in page and "banner known" in page


def test_an_overread_entry_does_not_hide_a_crash_that_is_no_overread(gemmcheck_binary,
                                                                     tmp_path, faulty):
    k = known_file(tmp_path, r"plugin:.*  crash  overread  see=docs/DEVIATIONS.md#blis-overread")
    r = fuzz(gemmcheck_binary, tmp_path, "segv", "--known", k, "--report", "r.json")
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["summary"]["known_findings"] == 0 and "known" not in rep["causes"][0]
    assert "FAIL:" in r.stdout and "known.txt:3:" in r.stdout  # and the entry is stale
    # matched by text alone (no overread), the same crash is known: the qualifier decides
    k2 = known_file(tmp_path, r"plugin:.*  crash  see=by#text")
    r2 = fuzz(gemmcheck_binary, tmp_path, "segv", "--known", k2)
    assert r2.returncode == 0, r2.stdout + r2.stderr


def test_an_overread_whose_case_shows_a_deviation_with_room_needs_that_deviation_known(
        gemmcheck_binary, tmp_path, faulty):
    # The `overtol` mode reads past B as `overread` does and then gets D's last element wrong:
    # with room after the operands its cases run and show out_of_tolerance (BLIS 0.9.0 met in
    # the main job of 2026-12-02: a case crashing on its over-read whose edge tile, given room,
    # drops a NaN·0 term). The crash is a known over-read only if that deviation is known too.
    entry = r"plugin:.*  crash  overread  see=docs/DEVIATIONS.md#blis-overread"
    k = known_file(tmp_path, entry)
    r = fuzz(gemmcheck_binary, tmp_path, "overtol", "--known", k, "--report", "r.json")
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.loads((tmp_path / "r.json").read_text())
    # (a crash with m = 0 or n = 0 is a pure over-read: nothing to get wrong, known)
    unknown = [f for f in rep["findings"] if f["kind"] == "crash" and "known" not in f]
    assert len(unknown) >= 10, rep["findings"]
    # (the last element off by 0.5 or 25 % shows as out_of_tolerance, improbable_error, or as
    # nonfinite_mismatch where it overflows D's type)
    k2 = known_file(tmp_path, entry, *(f"plugin:.*:overtol  {kind}  see=docs/DEVIATIONS.md#elsewhere"
                                       for kind in ("out_of_tolerance", "improbable_error",
                                                    "nonfinite_mismatch")))
    r2 = fuzz(gemmcheck_binary, tmp_path, "overtol", "--known", k2, "--report", "r2.json")
    assert r2.returncode == 0, r2.stdout + r2.stderr
    rep2 = json.loads((tmp_path / "r2.json").read_text())
    crashes = [f for f in rep2["findings"] if f["kind"] == "crash"]
    assert len(crashes) == len([f for f in rep["findings"] if f["kind"] == "crash"])
    assert all(f["known"] == "docs/DEVIATIONS.md#blis-overread" for f in crashes), crashes
    # an entry for another kind does not do: the room run's deviation must be the one known
    k3 = known_file(tmp_path, entry,
                    r"plugin:.*:overtol  nonfinite_mismatch  see=docs/DEVIATIONS.md#elsewhere",
                    r"plugin:.*:overtol  improbable_error  see=docs/DEVIATIONS.md#elsewhere")
    r3 = fuzz(gemmcheck_binary, tmp_path, "overtol", "--known", k3)
    assert r3.returncode == 1, r3.stdout + r3.stderr


@pytest.mark.parametrize("line, why", [
    ("ref  crashes  see=x", "known.txt:3: unknown kind 'crashes'"),
    ("ref  crash", "known.txt:3: the entry says nowhere why it is known (see=WHERE)"),
    ("ref  crash  colour=red  see=x", "known.txt:3: unknown qualifier 'colour=red'"),
    ("ref  crash  rule=(  see=x", "known.txt:3: bad rule pattern '('"),
    ("ref", "known.txt:3: an entry is BACKEND-PATTERN KIND"),
])
def test_a_malformed_file_is_one_line_and_exit_2(gemmcheck_binary, tmp_path, line, why):
    k = known_file(tmp_path, line)
    r = subprocess.run([gemmcheck_binary, "fuzz", "--backend", "ref", "--cases", "5",
                        "--known", k], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not r.stdout


def test_a_baseline_covers_its_own_causes_and_not_new_ones(gemmcheck_binary, tmp_path, faulty):
    r = fuzz(gemmcheck_binary, tmp_path, "nan", "--report", "base.json")
    assert r.returncode == 1
    again = fuzz(gemmcheck_binary, tmp_path, "nan", "--baseline", "base.json", "--report",
                 "r.json")
    assert again.returncode == 0, again.stdout + again.stderr
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["summary"]["known_findings"] == rep["summary"]["distinct_findings"] > 0
    assert rep["findings"][0]["known"] == "baseline base.json"
    new = fuzz(gemmcheck_binary, tmp_path, "tolerance", "--baseline", "base.json")
    assert new.returncode == 1, new.stdout
    bad = subprocess.run([gemmcheck_binary, "fuzz", "--backend", "ref", "--cases", "5",
                          "--baseline", str(SOURCE / "docs" / "junit.xsd")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cannot read baseline" in bad.stderr, bad.stderr


def test_merge_keeps_known_only_where_every_shard_agrees(gemmcheck_binary, tmp_path, faulty):
    k = known_file(tmp_path, r"plugin:.*:nan  nonfinite_mismatch  see=test#nan")
    for i in (1, 2):
        r = fuzz(gemmcheck_binary, tmp_path, "nan", "--shard", f"{i}/2", "--known", k,
                 "--report", f"s{i}.json")
        assert r.returncode == 0, r.stdout + r.stderr
    m = subprocess.run([gemmcheck_binary, "merge", "--report", "m.json", "s1.json", "s2.json"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert m.returncode == 0, m.stdout + m.stderr
    assert "PASS: known deviations only" in m.stdout
    # the second shard without the marks: what both found is no longer known
    r = fuzz(gemmcheck_binary, tmp_path, "nan", "--shard", "2/2", "--report", "s2.json")
    assert r.returncode == 1
    m = subprocess.run([gemmcheck_binary, "merge", "--report", "m.json", "s1.json", "s2.json"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert m.returncode == 1 and "FAIL:" in m.stdout, m.stdout
    # merge --known marks afresh
    m = subprocess.run([gemmcheck_binary, "merge", "--report", "m.json", "--known", k,
                        "s1.json", "s2.json"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert m.returncode == 0, m.stdout + m.stderr


def test_the_shipped_file_loads(gemmcheck_binary, tmp_path):
    r = subprocess.run([gemmcheck_binary, "fuzz", "--backend", "ref", "--cases", "20",
                        "--no-progress", "--known", str(SOURCE / "fuzz" / "known" /
                                                        "debian12.txt")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS: no findings" in r.stdout
    assert "covered nothing" not in r.stdout  # no entry is about ref


def test_certify_marks_known_findings_and_compare_does_not_count_them(gemmcheck_binary,
                                                                      tmp_path):
    """The size-wrong upgrade backend is off by 1% at M = 17, which the campaign's first edge
    case (m = 17) finds: certified with a known entry for it, the new finding is no regression."""
    upgrade = os.environ.get("GEMMCHECK_UPGRADE_PLUGIN")
    if not upgrade:
        pytest.fail("GEMMCHECK_UPGRADE_PLUGIN is not set (ctest sets it)")
    spec = f"plugin:{upgrade}:size-wrong"
    k = known_file(tmp_path, r"plugin:.*:size-wrong  out_of_tolerance  see=test#size-wrong")

    def certify(out, *extra):
        r = subprocess.run([gemmcheck_binary, "certify", "--backend", spec, "--out", out,
                            *extra], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr

    certify("before.json", "--time", "0")
    certify("known.json", "--time", "2", "--known", k)
    certify("plain.json", "--time", "2")
    found = json.loads((tmp_path / "known.json").read_text())["campaign"]["findings"]
    assert found and all(f.get("known") == "test#size-wrong" for f in found), found

    def compare(after):
        return subprocess.run([gemmcheck_binary, "compare", "before.json", after], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    # a backend already outside its bound on some pinned cases is no regression of itself (the
    # old compare counted every case outside the bound, not only those newly outside)
    r = compare("before.json")
    assert r.returncode == 0 and r.stdout.startswith("NO REGRESSION (exit 0): identical"), r.stdout
    r = compare("known.json")
    assert r.returncode == 0 and "(known: test#size-wrong)" in r.stdout, r.stdout + r.stderr
    r = compare("plain.json")
    assert r.returncode == 1 and "accuracy beyond the bound" in r.stdout, r.stdout + r.stderr
    bad = subprocess.run([gemmcheck_binary, "certify", "--backend", spec, "--out", "x.json",
                          "--known", str(tmp_path / "nonexistent.txt")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cannot read known findings" in bad.stderr, bad.stderr
    assert not (tmp_path / "x.json").exists()
