"""How many context-assembly helper processes a worker starts, and how a bad count is
refused: ``PRESSROOM_HELPER_PROCESSES`` / ``--helper-processes`` (see ``worker.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import worker
from settings import HELPER_PROCESSES, Settings, SettingsError


@pytest.mark.parametrize(("raw", "cores", "want"), [
    ("", 2, 1), ("", 1, 0), ("0", 8, 0), ("3", 1, 3), (" 2 ", 4, 2)])
def test_default_helper_processes(monkeypatch: pytest.MonkeyPatch, raw: str, cores: int,
                                  want: int) -> None:
    monkeypatch.setattr("worker.os.cpu_count", lambda: cores)
    settings = Settings.from_env({HELPER_PROCESSES: raw})
    assert worker.default_helper_processes(settings) == want


@pytest.mark.parametrize("raw", ["two", "-1", "1.5"])
def test_a_bad_helper_count_is_one_clear_error(monkeypatch: pytest.MonkeyPatch,
                                               raw: str) -> None:
    monkeypatch.setenv(HELPER_PROCESSES, raw)
    with pytest.raises(SettingsError, match=HELPER_PROCESSES):
        Settings.from_env({HELPER_PROCESSES: raw})
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
    assert HELPER_PROCESSES in proc.stderr and "Traceback" not in proc.stderr
