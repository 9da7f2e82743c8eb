"""certify's probes run as tasks of src/run (task.c): each child in its own process group,
killed, group and all, at --probe-timeout, and with gemmcheck. The `noalarm` test backend
(tests/faulty_backends.c) blocks SIGALRM, SIGTERM and SIGINT in every call and spins: the old
probing children, ended by alarm(), hung certify for good and outlived it."""
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
