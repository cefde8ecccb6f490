"""The fault matrix follows the activity registry (no server needed)."""

from __future__ import annotations

from pathlib import Path

from activities.registry import ACTIVITY_NAMES
from tests.faults.matrix import DEFAULT_KILL_CELLS, KILL_CELLS


def test_every_activity_has_cells_and_pause_points() -> None:
    """The matrix follows the registry: a new activity needs its two cells, and each
    cell's pause point is in the activity's code."""
    names = {c.name for c in KILL_CELLS}
    for activity in ACTIVITY_NAMES:
        assert {f"kill:{activity}_before_write", f"kill:{activity}_after_write"} <= names
    source = "\n".join(p.read_text(encoding="utf-8")
                       for p in (Path(__file__).resolve().parents[2] / "activities").glob("*.py"))
    for cell in KILL_CELLS:
        assert f'pause_point("{cell.point}")' in source, cell.point
    assert set(DEFAULT_KILL_CELLS) <= names
