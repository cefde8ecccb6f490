"""The fault matrix follows the activity registry (no server needed)."""

from __future__ import annotations

from pathlib import Path

from activities.registry import ACTIVITY_NAMES
from tests.faults.matrix import DEFAULT_KILL_CELLS, FORK_ACTIVITIES, KILL_CELLS, selected_kill_cells


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


def test_cells_of_an_activity_only_a_fork_runs_drive_a_fork() -> None:
    """``fork_state`` runs only in a forked job: its cells fork a parent (a fresh job
    would never reach their pause points, and a full run would wait for them in vain);
    every other cell drives a fresh job, and the default run's cells are unchanged."""
    assert FORK_ACTIVITIES <= set(ACTIVITY_NAMES)
    for cell in KILL_CELLS:
        activity = cell.name.removeprefix("kill:").rsplit("_", 2)[0]
        assert cell.fork == (activity in FORK_ACTIVITIES), cell
    assert {c.name for c in KILL_CELLS if c.fork} == {
        "kill:fork_state_before_write", "kill:fork_state_after_write"}
    assert not any(c.fork for c in selected_kill_cells()) or \
        len(selected_kill_cells()) == len(KILL_CELLS)
