"""Messages on stderr (`==> `, `warning: `, `error: `), and the error that ends a command."""
from __future__ import annotations

import os
import subprocess
import sys
from typing import NoReturn


class StackError(Exception):
    """Ends the command with `error: MESSAGE` on stderr and exit status `status` (1)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.message = message
        self.status = status


def _err(text: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(text)
    sys.stderr.flush()


def info(message: str) -> None:
    _err(f"==> {message}\n")


def warn(message: str) -> None:
    _err(f"warning: {message}\n")


def die(message: str) -> NoReturn:
    raise StackError(message)


def show_log_tail(path: str, lines: int = 40) -> None:
    if os.path.isfile(path) and os.path.getsize(path) > 0:
        _err(f"--- last {lines} lines of {path} ---\n")
        subprocess.run(["tail", "-n", str(lines), "--", path], stdout=sys.stderr, check=False)
        _err("---\n")
    else:
        _err(f"({path} is empty or missing)\n")
