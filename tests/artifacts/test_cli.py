"""`pressroom selfcheck` and `pressroom db upgrade|downgrade`, run through the real CLI on
real databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pressroom import app

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PRESSROOM_HOME", str(tmp_path))
    monkeypatch.delenv("PRESSROOM_DATABASE_URL", raising=False)
    return tmp_path


def test_selfcheck_passes_and_cleans_up(home: Path) -> None:
    result = runner.invoke(app, ["selfcheck"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for check in ("migrate", "put/get", "conflict", "race", "scope", "tamper", "records",
                  "default store"):
        assert check in result.output
    assert "FAILED" not in result.output
    assert (home / "pressroom.db").is_file()
    assert list((home / "selfcheck").iterdir()) == []  # scratch database removed


def test_selfcheck_fails_visibly_on_unreachable_default(home: Path) -> None:
    result = runner.invoke(app, ["selfcheck", "--url", "postgresql+asyncpg://u@127.0.0.1:1/x"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "FAILED" in result.output and "127.0.0.1:1" in result.output


def test_db_upgrade_downgrade(empty_db_url: str) -> None:
    up = runner.invoke(app, ["db", "upgrade", "--url", empty_db_url])
    assert up.exit_code == 0, up.output
    assert "empty → 0001_initial" in up.output
    down = runner.invoke(app, ["db", "downgrade", "base", "--url", empty_db_url])
    assert down.exit_code == 0, down.output
    assert "0001_initial → empty" in down.output
    bad = runner.invoke(app, ["db", "downgrade", "nonsense", "--url", empty_db_url])
    assert bad.exit_code == 1
    unreachable = runner.invoke(app, ["db", "upgrade", "--url",
                                      "postgresql+asyncpg://u@127.0.0.1:1/x"])
    assert unreachable.exit_code == 1
