"""The command's output into a pipe whose reader has gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pytest_execretrieval.cli import CLOSED_PIPE_STATUS

ROOT = Path(__file__).resolve().parent.parent


def test_doctor_into_a_closed_pipe_exits_quietly():
    # The reader closes its end before the command writes (`| head -1` having read its line):
    # every write then fails with EPIPE, deterministically.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_execretrieval.cli", "doctor", "--json"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
    assert done.returncode == CLOSED_PIPE_STATUS
