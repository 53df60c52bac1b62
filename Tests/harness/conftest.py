"""The harness's unit tests import scripts/stacklib; `run_stack` runs scripts/stack as a program."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(ROOT / "scripts"))
sys.dont_write_bytecode = True


def run_stack(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """scripts/stack ARGS with ENV (the caller's PATH and HOME only, plus ENV)."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    return subprocess.run([str(ROOT / "scripts" / "stack"), *args], env={**base, **(env or {})}, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def stack_dir(tmp_path):
    path = tmp_path / "stack"
    path.mkdir()
    return path
