"""The README's examples run verbatim from a build tree and print what the README says:

- the `gemmcheck verify` session (each `$ ` line run in a fresh folder, its output compared line
  by line with the README's), and the figures the text gives for the same file checked without
  a model;
- the pytest example is the complete file examples/python/test_verify_cli.py (which the
  `python` suite runs), character for character.
"""
import re
import shlex
import subprocess
import sys

from conftest import SOURCE

README = (SOURCE / "README.md").read_text()


def blocks():
    return re.findall(r"^```[a-z]*\n(.*?)^```", README, re.S | re.M)


def session():
    return next(b for b in blocks() if "$ build/gemmcheck verify" in b)


def run_line(line, cwd, binary):
    args = shlex.split(line)
    if args[0] == "build/gemmcheck":
        args[0] = binary
    elif args[0] == "python3":
        args[0] = sys.executable
        args[1] = str(SOURCE / args[1])
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_verify_session_prints_what_the_readme_shows(gemmcheck_binary, tmp_path):
    lines = session().rstrip("\n").split("\n")
    assert lines[0].startswith("$ python3 examples/python/make_verify_inputs.py")
    i = 0
    while i < len(lines):
        assert lines[i].startswith("$ "), lines[i]
        cmd, i = lines[i][2:], i + 1
        want = []
        while i < len(lines) and not lines[i].startswith("$ "):
            want.append(lines[i])
            i += 1
        r = run_line(cmd, tmp_path, gemmcheck_binary)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.rstrip("\n").split("\n") == want, r.stdout


def test_the_figures_the_text_gives_without_a_model(gemmcheck_binary, tmp_path):
    run_line("python3 examples/python/make_verify_inputs.py", tmp_path, gemmcheck_binary)
    r = run_line("build/gemmcheck verify --a a.npy --b b.npy --d d.npy", tmp_path,
                 gemmcheck_binary)
    assert r.returncode == 1, r.stdout + r.stderr
    said = re.search(r"the same file fails, (\d+) elements out of tolerance\s+and (\d+) more",
                     README)
    assert said, "the README no longer states the figures"
    tol = re.search(r"(\d+) element\(s\) out_of_tolerance|out_of_tolerance: (\d+)", r.stdout)
    imp = re.search(r"(\d+) element\(s\) improbable_error|improbable_error: (\d+)", r.stdout)
    got = [next(g for g in m.groups() if g) if m else "0" for m in (tol, imp)]
    assert got == [said.group(1), said.group(2)], r.stdout


def test_the_pytest_example_is_the_complete_file_ci_runs():
    example = (SOURCE / "examples" / "python" / "test_verify_cli.py").read_text()
    assert example in blocks(), "README's pytest example differs from test_verify_cli.py"
