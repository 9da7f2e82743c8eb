"""What the tests that run the command line share: the gemmcheck binary under test
($GEMMCHECK_BINARY, which ctest sets; else build/gemmcheck of the source tree)."""

import os
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("GEMMCHECK_SOURCE_DIR", Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def gemmcheck_binary():
    binary = os.environ.get("GEMMCHECK_BINARY") or str(SOURCE / "build" / "gemmcheck")
    if not Path(binary).exists():
        pytest.skip(f"no gemmcheck binary at {binary}: set GEMMCHECK_BINARY")
    return binary
