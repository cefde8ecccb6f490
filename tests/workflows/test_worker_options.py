"""How many context-assembly helper processes a worker starts, and how a bad count is
refused: ``PRESSROOM_HELPER_PROCESSES`` / ``--helper-processes`` (see ``worker.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import worker
from contracts.errors import JobError


@pytest.mark.parametrize(("raw", "cores", "want"), [
    ("", 2, 1), ("", 1, 0), ("0", 8, 0), ("3", 1, 3), (" 2 ", 4, 2)])
def test_default_helper_processes(monkeypatch: pytest.MonkeyPatch, raw: str, cores: int,
                                  want: int) -> None:
    monkeypatch.setenv(worker.HELPERS_ENV, raw)
    monkeypatch.setattr(worker.os, "cpu_count", lambda: cores)
    assert worker.default_helper_processes() == want


@pytest.mark.parametrize("raw", ["two", "-1", "1.5"])
def test_a_bad_helper_count_is_one_clear_error(monkeypatch: pytest.MonkeyPatch,
                                               raw: str) -> None:
    monkeypatch.setenv(worker.HELPERS_ENV, raw)
    with pytest.raises(JobError, match=worker.HELPERS_ENV):
        worker.default_helper_processes()
    proc = subprocess.run([sys.executable, "worker.py", "--helper-processes", raw],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "--helper-processes" in proc.stderr and "Traceback" not in proc.stderr
    # the same value from the environment (set above) is refused before connecting
    proc = subprocess.run([sys.executable, "worker.py", "--address", "127.0.0.1:1"],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert worker.HELPERS_ENV in proc.stderr and "Traceback" not in proc.stderr
