"""Fixture sources for the acquisition tests: the example repositories, built for real."""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts.job_spec import TopicSpec
from contracts.path_safety import PathRoots
from examples.build_fixtures import build_fixtures
from settings import Settings

AS_OF = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

TOPICS = [
    TopicSpec(name="jitter", terms=["jitter"]),
    TopicSpec(name="delay_cap", terms=["max_delay"]),
    TopicSpec(name="retry_after", terms=["Retry-After", "RetryAfter", "retry_after"]),
    TopicSpec(name="idempotency", terms=["idempotent", "Idempotency-Key"]),
]


def locations() -> dict[str, str]:
    """What source-location placeholders stand for, as a worker started now would be told
    (``Settings.locations``): the tests point ``PRESSROOM_FIXTURES`` / ``PRESSROOM_HOME``
    at their own trees with ``monkeypatch`` first."""
    return Settings.from_env(os.environ).locations


def roots(*folders: Path) -> PathRoots:
    """The roots a worker started now would have (Pressroom's own folders, as
    ``locations``), plus ``folders`` for reading and publishing — by default the system's
    temporary folder, which holds every test's ``tmp_path`` and fixture tree."""
    extra = folders or (Path(tempfile.gettempdir()),)
    return PathRoots.of(Settings.from_env(os.environ), sources=extra, publish=extra)


@pytest.fixture(scope="session")
def shared_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only fixture tree shared by tests that do not modify it."""
    target = tmp_path_factory.mktemp("fixtures")
    build_fixtures(target)
    return target


@pytest.fixture()
def fresh_fixtures(tmp_path: Path) -> Path:
    """A private fixture tree a test may modify."""
    build_fixtures(tmp_path / "fixtures")
    return tmp_path / "fixtures"


@pytest.fixture()
def fixtures_env(shared_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``${PRESSROOM_FIXTURES}`` points at the shared tree."""
    monkeypatch.setenv("PRESSROOM_FIXTURES", str(shared_fixtures))
    return shared_fixtures
