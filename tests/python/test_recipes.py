"""The CI recipes of examples/ci and examples/slurm run as written: every `gemmcheck` command in
them is executed with the real binary (campaign length cut to 1 second, shard by shard as the CI
system would run them, then the merge), and the merged JSON and JUnit files are read back. The
build steps are checked without running them: each package they install is one apt knows, each
-D option one gemmcheck's CMakeLists.txt defines."""

import csv
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from conftest import SOURCE as SRC
SECONDS = "1"


def workdir(tmp_path, binary):
    """A checkout as the recipes expect it: build/gemmcheck is the binary under test."""
    (tmp_path / "build").mkdir()
    os.symlink(binary, tmp_path / "build" / "gemmcheck")
    return tmp_path


def run_shell(script, cwd, env):
    full = dict(os.environ, **env)
    r = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=full, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, f"{script}\nexit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def invokes_gemmcheck(script):
    return re.search(r"(^|\s|\")(build/gemmcheck|\"\$GEMMCHECK\")\s", script) is not None


def check_build_steps(scripts):
    """apt-get install names packages apt knows; cmake -D options exist in CMakeLists.txt."""
    cmakelists = (SRC / "CMakeLists.txt").read_text()
    seen_apt = seen_cmake = False
    for s in scripts:
        for m in re.finditer(r"apt-get install[^\n]*", s):
            pkgs = [w for w in m.group(0).split()[2:] if not w.startswith("-")]
            assert pkgs
            seen_apt = True
            if shutil.which("apt-cache"):  # (exit 0 even when some are unknown: read the names)
                r = subprocess.run(["apt-cache", "show", "--no-all-versions"] + pkgs,
                                   capture_output=True, text=True)
                known = set(re.findall(r"^Package: (\S+)", r.stdout, re.M))
                assert set(pkgs) <= known, f"apt knows no package {sorted(set(pkgs) - known)}"
        for m in re.finditer(r"-D([A-Za-z_]+)=", s):
            seen_cmake = True
            name = m.group(1)
            assert name.startswith("CMAKE_") or name in cmakelists, f"unknown option -D{name}"
    assert seen_apt and seen_cmake, "the recipe neither installs nor builds gemmcheck"


def check_merged(json_path, xml_path, shards):
    """The merge holds every shard of one campaign, with cases and no findings (a correct
    library), its JUnit file parses, and the CSV support matrix has a row per tuple."""
    summary = json.loads(Path(json_path).read_text())["summary"]
    with open(Path(json_path).with_name("campaign-matrix.csv"), newline="") as f:
        assert len(list(csv.DictReader(f))) == len(summary["support_matrix"]) > 0
    assert summary["shards_merged"] == shards, summary
    assert sorted(s["shard"] for s in summary["shards"]) == sorted(
        f"{i}/{shards}" for i in range(1, shards + 1)), summary["shards"]
    assert summary["cases"] > 0 and summary["distinct_findings"] == 0, summary
    root = ET.parse(xml_path).getroot()  # a strict XML parser
    assert root.tag == "testsuites" and len(root.findall(".//testcase")) > 0


def github_value(expr, shard, total):
    return {"matrix.shard": str(shard), "strategy.job-total": str(total)}[expr.strip()]


def test_github_actions_workflow(tmp_path, gemmcheck_binary):
    wf = yaml.safe_load((SRC / "examples/ci/github-actions.yml").read_text())
    env = {k: str(v) for k, v in wf["env"].items()}
    env["GEMMCHECK_TIME"] = SECONDS
    d = workdir(tmp_path, gemmcheck_binary)
    shards = wf["jobs"]["shard"]["strategy"]["matrix"]["shard"]
    steps = {job: [s for s in wf["jobs"][job]["steps"] if "run" in s] for job in ("shard", "merge")}
    check_build_steps([s["run"] for job in steps.values() for s in job])
    ran = 0
    for shard in shards:  # each matrix job's gemmcheck steps, in order
        for s in steps["shard"]:
            if invokes_gemmcheck(s["run"]):
                script = re.sub(r"\$\{\{([^}]*)\}\}",
                                lambda m: github_value(m.group(1), shard, len(shards)), s["run"])
                run_shell(script, d, env)
                ran += 1
    for s in steps["merge"]:
        if invokes_gemmcheck(s["run"]):
            run_shell(s["run"], d, env)
            ran += 1
    assert ran == len(shards) + 1
    check_merged(d / "campaign.json", d / "campaign.xml", len(shards))
    assert len(list(d.glob("shard-*.findings.jsonl"))) == len(shards)


def test_gitlab_ci_pipeline(tmp_path, gemmcheck_binary):
    ci = yaml.safe_load((SRC / "examples/ci/gitlab-ci.yml").read_text())
    env = {k: str(v) for k, v in ci["variables"].items()}
    env["GEMMCHECK_TIME"] = SECONDS
    d = workdir(tmp_path, gemmcheck_binary)
    check_build_steps(["\n".join(ci["default"]["before_script"])])
    total = int(ci["shard"]["parallel"])
    for i in range(1, total + 1):
        for line in ci["shard"]["script"]:
            if invokes_gemmcheck(line):
                run_shell(line, d, dict(env, CI_NODE_INDEX=str(i), CI_NODE_TOTAL=str(total)))
    for line in ci["merge"]["script"]:
        run_shell(line, d, env)
    assert ci["merge"]["artifacts"]["reports"]["junit"] == "campaign.xml"
    check_merged(d / "campaign.json", d / "campaign.xml", total)


def test_slurm_array_and_merge(tmp_path, gemmcheck_binary):
    sb = (SRC / "examples/slurm/campaign.sbatch").read_text()
    first, last = map(int, re.search(r"#SBATCH --array=(\d+)-(\d+)", sb).group(1, 2))
    d = workdir(tmp_path, gemmcheck_binary)
    env = {"GEMMCHECK_TIME": SECONDS, "SLURM_ARRAY_TASK_MIN": str(first),
           "SLURM_ARRAY_TASK_COUNT": str(last - first + 1), "SLURM_CPUS_PER_TASK": "2"}
    for task in range(first, last + 1):
        run_shell(f"bash {SRC}/examples/slurm/campaign.sbatch", d,
                  dict(env, SLURM_ARRAY_TASK_ID=str(task)))
    run_shell(f"bash {SRC}/examples/slurm/merge.sbatch", d, {})
    out = d / "gemmcheck-out"
    check_merged(out / "campaign.json", out / "campaign.xml", last - first + 1)
    # submit.sh: the merge depends on the whole array (sbatch replaced by a recorder)
    fake = d / "bin"
    fake.mkdir()
    (fake / "sbatch").write_text('#!/bin/sh\necho "$@" >> "$LOG"\necho 4242\n')
    (fake / "sbatch").chmod(0o755)
    run_shell(f"bash {SRC}/examples/slurm/submit.sh", d,
              {"PATH": f"{fake}:{os.environ['PATH']}", "LOG": str(d / "sbatch.log")})
    calls = (d / "sbatch.log").read_text().splitlines()
    assert calls[0].endswith("campaign.sbatch") and "--parsable" in calls[0]
    assert "--dependency=afterany:4242" in calls[1] and calls[1].endswith("merge.sbatch")
