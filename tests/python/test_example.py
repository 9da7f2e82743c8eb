"""examples/python/test_matmul.py can fail: with its planted bug (EXAMPLE_BUG=1) every one of its
cases fails and names an out_of_tolerance element; without it they all pass."""

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "test_matmul.py"


def run_example(bug):
    env = dict(os.environ, EXAMPLE_BUG=bug)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=300)


def test_the_example_passes_a_correct_product():
    r = run_example("")
    assert r.returncode == 0 and "3 passed" in r.stdout, r.stdout + r.stderr


def test_the_example_fails_the_planted_bug_with_its_worst_element():
    r = run_example("1")
    assert r.returncode == 1 and "3 failed" in r.stdout, r.stdout + r.stderr
    assert r.stdout.count("out_of_tolerance at (") >= 3, r.stdout
