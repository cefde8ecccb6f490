"""Fixtures of the fault matrix: the durable-job tests' dev server and per-test store and
queue, a row per cell, and the matrix printed and written to ``reports/faults.md`` at the
end of the run."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.faults.matrix import REPORT, ROWS, Cell, Row, report
from tests.workflows.conftest import docs, store_url, task_queue, temporal_env

__all__ = ["docs", "fault_row", "store_url", "task_queue", "temporal_env"]


@pytest.fixture
def fault_row(request: pytest.FixtureRequest) -> Iterator[Callable[[Cell], Row]]:
    """``fault_row(cell)``: the cell's row in the matrix (filled in by the test)."""
    made: list[Row] = []

    def make(cell: Cell) -> Row:
        row = Row(cell=cell.name, fault=cell.fault, nodeid=request.node.nodeid)
        ROWS.append(row)
        made.append(row)
        return row

    yield make
    for row in made:  # a cell that failed before its check still shows its time
        row.seconds = row.seconds or time.monotonic() - row.started


def _outcomes(stats: dict[str, list[Any]]) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for key in ("error", "skipped", "passed", "xpassed", "xfailed", "failed"):
        for rep in stats.get(key, []):
            nodeid = getattr(rep, "nodeid", None)
            if nodeid and (key != "error" or nodeid not in outcomes):
                outcomes[nodeid] = key
    return outcomes


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not ROWS:
        return
    text = report(ROWS, _outcomes(terminalreporter.stats))
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(text, encoding="utf-8")
    terminalreporter.write_sep("=", "fault-injection matrix")
    for line in text.splitlines():
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"(written to {REPORT})")
