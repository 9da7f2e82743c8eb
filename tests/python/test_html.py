"""The HTML reports of fuzz, certify and compare: each one file that a strict XML parser reads,
with no reference to anything outside it (no script, style sheet, image or font from a network
or a file), holding what the page promises; and each rendered by a real browser (Debian's
Chromium, headless) into a screenshot of the expected size. Without Chromium the browser test is
skipped with the reason; CI installs it (scripts/install-deps.sh)."""

import os
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import SOURCE

XHTML = "{http://www.w3.org/1999/xhtml}"
SVG = "{http://www.w3.org/2000/svg}"
# elements that would load something (none may appear), and attributes that name a resource
LOADING = {"script", "link", "img", "iframe", "object", "embed", "audio", "video", "source",
           "base", "image", "use", "foreignObject"}
REFERENCING = {"src", "href", "{http://www.w3.org/1999/xlink}href", "srcset", "poster",
               "data", "action", "background"}


def _plugin(name):
    path = os.environ.get(name)
    if not path or not Path(path).exists():
        pytest.skip(f"{name} is not set to a built test plugin (ctest sets it)")
    return path


def _run(binary, *args, expect=(0,)):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)
    assert p.returncode in expect, f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


@pytest.fixture(scope="module")
def pages(gemmcheck_binary, tmp_path_factory):
    """A campaign with a faulty backend, a certificate and a comparison that finds regressions."""
    d = tmp_path_factory.mktemp("html")
    faulty = _plugin("GEMMCHECK_FAULTY_PLUGIN")
    upgrade = _plugin("GEMMCHECK_UPGRADE_PLUGIN")
    _run(gemmcheck_binary, "fuzz", "--backend", "ref", "--backend", f"plugin:{faulty}:tolerance",
         "--time", "4", "--seed", "3", "--report", str(d / "fuzz.json"),
         "--findings", str(d / "fuzz.jsonl"), "--html", str(d / "fuzz.html"), expect=(1,))
    _run(gemmcheck_binary, "certify", "--backend", f"plugin:{upgrade}:base", "--time", "2",
         "--out", str(d / "base.json"), "--html", str(d / "certify.html"))
    _run(gemmcheck_binary, "certify", "--backend", f"plugin:{upgrade}:transpose-wrong",
         "--time", "0", "--out", str(d / "after.json"))
    out = _run(gemmcheck_binary, "compare", str(d / "base.json"), str(d / "after.json"),
               "--html", str(d / "compare.html"), "--json", str(d / "compare.json"), expect=(1,))
    return {"fuzz": d / "fuzz.html", "certify": d / "certify.html",
            "compare": d / "compare.html", "compare_stdout": out}


def _external_references(root):
    found = []
    for el in root.iter():
        tag = el.tag.split("}")[-1]
        if tag in LOADING:
            found.append(f"<{tag}>")
        for attr, value in el.attrib.items():
            if attr in REFERENCING and not value.startswith("#"):
                found.append(f"{tag} {attr}={value}")
        if tag == "style" and el.text and ("url(" in el.text or "@import" in el.text):
            found.append("a style sheet that loads something")
        if "url(" in el.attrib.get("style", ""):
            found.append(f"{tag} style url(")
    return found


@pytest.mark.parametrize("page", ["fuzz", "certify", "compare"])
def test_each_page_is_one_self_contained_well_formed_file(pages, page):
    root = ET.parse(pages[page]).getroot()  # strict: any malformed markup raises
    assert root.tag == XHTML + "html"
    assert _external_references(root) == []
    assert root.find(f"{XHTML}head/{XHTML}style") is not None
    # a planted reference is caught: the check itself can fail
    planted = ET.fromstring('<html xmlns="http://www.w3.org/1999/xhtml"><body>'
                            '<img src="https://example.org/x.png"/></body></html>')
    assert _external_references(planted)


def _text(el):
    return "".join(el.itertext())


def test_the_campaign_page_shows_matrix_histograms_and_reproducers(pages):
    root = ET.parse(pages["fuzz"]).getroot()
    rows = root.findall(f".//{XHTML}tr")
    bad = [r for r in rows if r.get("class") == "bad"]
    ok = [r for r in rows if r.get("class") == "ok"]
    assert bad and ok, "the faulty backend's tuples red, ref's green"
    assert len(root.findall(f".//{SVG}svg")) >= len(ok)
    repros = [_text(p) for p in root.iter(f"{XHTML}pre") if p.get("class") == "repro"]
    assert repros and all(r.startswith("gemmcheck repro --backend ") for r in repros)
    # the histogram's last bar (beyond the bound) is red and counted on some faulty tuple
    beyond = [t for t in root.iter(f"{SVG}title") if (t.text or "").startswith(">1: ")
              and not t.text.endswith(": 0")]
    assert beyond


def test_the_certificate_page_shows_support_fingerprint_and_files(pages):
    text = _text(ET.parse(pages["certify"]).getroot())
    for want in ("f32 f32 f32 f32 | f32", "runs", "accumulator bits",
                 "24 bits, the precision of f32", "SHA-256", "Environment"):
        assert want in text, want


def test_the_comparison_page_names_the_verdict_and_the_smallest_case(pages):
    root = ET.parse(pages["compare"]).getroot()
    text = _text(root)
    assert "verdict: accuracy beyond the bound" in text
    smallest = [_text(p) for p in root.iter(f"{XHTML}pre") if p.get("class") == "repro"]
    assert smallest and "ta=T" in smallest[0], "the wrong transpose path reproduces it"
    assert smallest[0].split("'")[1] in pages["compare_stdout"]
    assert any(r.get("class") == "bad" for r in root.iter(f"{XHTML}tr"))


CHROMIUM = shutil.which("chromium")


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install "
                    "chromium); CI installs it")
@pytest.mark.parametrize("page", ["fuzz", "certify", "compare"])
def test_a_real_browser_renders_each_page(pages, page, tmp_path):
    shot = tmp_path / f"{page}.png"
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-quic", "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,1600",
                        f"--screenshot={shot}", pages[page].as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert _png_size(shot) == (1280, 1600)
    assert shot.stat().st_size > 20000, "a blank page compresses to a few kB"


def test_the_certificate_keeps_each_pinned_case_with_its_distance_in_ulps(pages):
    """Every pinned case that ran has its reproducer, digest, error/bound and ulps (also those
    computed in place, D = C, where the exact result needs a buffer of its own)."""
    import json
    cert = json.loads((pages["certify"].parent / "base.json").read_text())
    pinned = cert["probed"]["rows"][0]["pinned"]
    ran = [p for p in pinned if "digest" in p]
    assert len(ran) == len(pinned) == 1000
    assert all(p["case"].startswith("gck1 ") and p["ulps"] >= 0 and p["ratio"] >= 0 for p in ran)
    in_place = [p for p in ran if " d=c " in p["case"]]
    assert in_place and any(p["ulps"] > 0 for p in in_place)
    import base64
    kept = [p for p in ran if "d" in p]  # small results kept whole, for element-wise shifts
    assert 100 < len(kept) < len(ran)
    assert all(0 < len(base64.b64decode(p["d"])) <= 1024 for p in kept)


def test_every_pinned_case_of_every_row_is_kept_even_beyond_the_range_of_ulps(
        gemmcheck_binary, tmp_path):
    """f64 results far from the exact value (huge inputs) are more ulps away than a double
    holds; the case is kept with the largest double, not lost as null."""
    zoo = _plugin("GEMMCHECK_ZOO_PLUGIN")
    out = tmp_path / "netlib.json"
    _run(gemmcheck_binary, "certify", "--backend", f"plugin:{zoo}:netlib", "--time", "0",
         "--out", str(out))
    import json
    import math
    rows = json.loads(out.read_text())["probed"]["rows"]
    assert {r["tuple"] for r in rows} >= {"f32 f32 f32 f32 | f32", "f64 f64 f64 f64 | f64"}
    for r in rows:
        assert r["pinned"] and all(p is not None and "case" in p for p in r["pinned"]), r["tuple"]
        assert all(math.isfinite(p["ulps"]) and p["ulps"] >= 0
                   for p in r["pinned"] if "digest" in p), r["tuple"]


def _validator(name):
    """A validator of docs/NAME.schema.json that resolves its references to the report's
    schema (jsonschema 4.10 as Debian ships it: a RefResolver with both in its store)."""
    import json
    import jsonschema
    docs = SOURCE / "docs"
    schema = json.loads((docs / f"{name}.schema.json").read_text())
    report = json.loads((docs / "report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    resolver = jsonschema.RefResolver.from_schema(schema, store={report["$id"]: report,
                                                                 schema["$id"]: schema})
    return jsonschema.Draft202012Validator(schema, resolver=resolver)


def test_certificates_and_the_comparison_validate_against_their_schemas(pages, gemmcheck_binary,
                                                                        tmp_path):
    import json
    import jsonschema
    d = pages["certify"].parent
    cert = _validator("certificate")
    base = json.loads((d / "base.json").read_text())
    after = json.loads((d / "after.json").read_text())
    cert.validate(base)  # with a campaign
    cert.validate(after)  # --time 0: campaign null
    assert base["certificate_version"] == 2 and base["campaign"]["summary"]["cases"] > 0
    assert after["campaign"] is None
    # a certificate the schema must refuse: a row whose support status is not one of its words
    bad = json.loads(json.dumps(base))
    bad["probed"]["rows"][0]["support"]["status"] = "fine"
    with pytest.raises(jsonschema.ValidationError):
        cert.validate(bad)
    cmp = json.loads((d / "compare.json").read_text())
    _validator("compare").validate(cmp)
    assert cmp["compare_version"] == 1 and cmp["decision"] == "REGRESSION"
    assert cmp["exit_status"] == 1 and cmp["regressions"] > 0
    assert pages["compare_stdout"].splitlines()[0].startswith("REGRESSION (exit 1)")
    assert len(cmp["notes"]) == cmp["differences"]
    assert sum(cmp["by_class"].values()) <= cmp["differences"]
    assert cmp["smallest_reproducer"] is None or cmp["smallest_reproducer"] in \
        pages["compare_stdout"]
    # a certificate compared with itself: identical, exit 0, the same file format
    same = tmp_path / "same.json"
    _run(gemmcheck_binary, "compare", str(d / "base.json"), str(d / "base.json"), "--json",
         str(same))
    s = json.loads(same.read_text())
    _validator("compare").validate(s)
    assert s["decision"] == "NO REGRESSION" and s["differences"] == 0 and s["verdict"] == \
        "identical" and s["smallest_reproducer"] is None
