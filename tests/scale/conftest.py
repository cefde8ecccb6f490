"""Fixtures of the scale test: the durable-job tests' dev server, task queue and documents."""

from __future__ import annotations

from tests.workflows.conftest import docs, task_queue, temporal_env

__all__ = ["docs", "task_queue", "temporal_env"]
