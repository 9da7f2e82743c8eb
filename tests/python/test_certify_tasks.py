"""certify's probes run as tasks in workers (src/run/task.h): each in its own process group,
killed, group and all, at --probe-timeout, and with gemmcheck; its output in checked frames, its
stdout and stderr captured. The `noalarm` test backend (tests/faulty_backends.c) blocks SIGALRM,
SIGTERM and SIGINT in every call and spins: the old probing children, ended by alarm(), hung
certify for good and outlived it. The other hostile modes are those the campaigns' tests use:
before the probes became worker tasks, a backend writing to descriptor 4 spoiled a probe's JSON
("the backend's probes finished"), one printing to stdout wrote into certify's own stdout, and
one leaving a sleeping child behind made its probes look hung."""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

FAULTY = os.environ.get("GEMMCHECK_FAULTY_PLUGIN", "")


def leftovers(marker):
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            try:
                if marker in (p / "cmdline").read_bytes():
                    found.append(int(p.name))
            except OSError:
                pass
    return found


def test_a_backend_that_blocks_alarms_and_spins_costs_its_rows_not_the_run(gemmcheck_binary,
                                                                           tmp_path):
    if not FAULTY:
        pytest.fail("GEMMCHECK_FAULTY_PLUGIN is not set (ctest sets it)")
    spec = f"plugin:{FAULTY}:noalarm"
    t0 = time.monotonic()
    r = subprocess.run([gemmcheck_binary, "certify", "--backend", spec, "--time", "0",
                        "--probe-timeout", "2", "--out", "c.json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads((tmp_path / "c.json").read_text())["probed"]["rows"]
    assert len(rows) == 2
    for row in rows:
        for part in ("probe_failure", "pinned_failure"):
            assert row[part] == "the backend's probes did not finish within 2 s (a hang)", row
    # the one-thread run, then two children per row, 2 s each: well under a minute
    assert took < 60, took
    time.sleep(0.5)
    assert leftovers(b"noalarm") == [], "a probing child outlived certify"
    bad = subprocess.run([gemmcheck_binary, "certify", "--backend", spec, "--out", "x.json",
                          "--probe-timeout", "0.5"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "--probe-timeout" in bad.stderr, bad.stderr


# mode -> what each row's probe_failure and pinned_failure say (None: the row is probed)
HOSTILE = {
    "pipejunk": "the backend's probes crashed (gemmcheck's message pipe carried bytes that are "
                "not a gemmcheck message (",
    "pipe13": "the backend's probes crashed (gemmcheck's message pipe carried bytes that are "
              "not a gemmcheck message (68 65 6c 6c ...)",
    "closefds": "the backend's probes crashed (the worker closed gemmcheck's message pipe "
                "before the task ended and was killed",
    "segv": "the backend's probes crashed (the worker died by signal 11 (Segmentation fault) "
            "before the task ended)",
    "killgroup": "the backend's probes crashed (the worker died by signal 15 (Terminated) "
                 "before the task ended)",
    "exit": "the backend's probes failed (the worker exited with status 7 before the task ended)",
    "stdout": None,
    "forksleep": None,
}


@pytest.mark.parametrize("mode", sorted(HOSTILE))
def test_hostile_backends_cost_certify_their_rows_with_the_right_reason(gemmcheck_binary,
                                                                        tmp_path, mode):
    if not FAULTY:
        pytest.fail("GEMMCHECK_FAULTY_PLUGIN is not set (ctest sets it)")
    spec = f"plugin:{FAULTY}:{mode}"
    env = dict(os.environ, GCK_FAULTY_PLAIN="f64")
    t0 = time.monotonic()
    r = subprocess.run([gemmcheck_binary, "certify", "--backend", spec, "--time", "0",
                        "--appetite", "none", "--probe-timeout", "90", "--out", "c.json"],
                       cwd=tmp_path, env=env, capture_output=True, timeout=300)
    took = time.monotonic() - t0
    out, err = r.stdout.decode("utf-8"), r.stderr.decode("utf-8")  # clean text: both decode
    assert r.returncode == 0, out + err
    rows = json.loads((tmp_path / "c.json").read_text())["probed"]["rows"]
    assert len(rows) == 2, rows
    for row in rows:
        for part in ("probe_failure", "pinned_failure"):
            if HOSTILE[mode] is None:
                assert part not in row, row
            else:
                assert row[part].startswith(HOSTILE[mode]), row[part]
        if HOSTILE[mode] is None:  # probed: the thread probe's halves met across two workers
            threads = [p["value"] for p in row["fingerprint"] if p["property"] == "threads"]
            assert threads == ["the same bits with one thread"], row["fingerprint"]
            assert row["support"]["status"] == "runs", row
            assert row["pinned"], row
    if mode == "stdout":  # what the backend printed: on stderr, labelled and cleaned, only
        assert "verdict" not in out and "\x1b" not in out, out
        shown = [l for l in err.splitlines() if "verdict:" in l]
        assert shown and all(l.startswith("backend output (worker ") and "\\x1b[2J" in l
                             for l in shown), err
    # no mode waits for --probe-timeout (90 s): a crash ends its task at once, a stray child does
    # not hold it open, a closed pipe is seen within 2 s (5 tasks). The probes of a correct row
    # take about 25 s here idle, more under ctest -j2's load (20 s was once too short)
    assert took < 85, took
    time.sleep(0.5)
    assert leftovers(mode.encode() + b"\x00") == [], "a probing worker or its child outlived certify"
