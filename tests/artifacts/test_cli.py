"""`pressroom selfcheck` and `pressroom db upgrade|downgrade`, run through the real CLI on
real databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from artifacts.migrate import head_revision
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
    assert f"empty → {head_revision()}" in up.output
    down = runner.invoke(app, ["db", "downgrade", "base", "--url", empty_db_url])
    assert down.exit_code == 0, down.output
    assert f"{head_revision()} → empty" in down.output
    bad = runner.invoke(app, ["db", "downgrade", "nonsense", "--url", empty_db_url])
    assert bad.exit_code == 1
    unreachable = runner.invoke(app, ["db", "upgrade", "--url",
                                      "postgresql+asyncpg://u@127.0.0.1:1/x"])
    assert unreachable.exit_code == 1


def test_db_attestation_key_creates_and_rotates_without_printing_a_secret(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = home / "keys" / "attestation.keys"
    made = runner.invoke(app, ["db", "attestation-key", str(path)])
    assert made.exit_code == 0, made.output
    assert "current key k1 (older keys kept to verify: none)" in made.output
    assert path.stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv("PRESSROOM_ATTESTATION_KEYS", str(path))
    rotated = runner.invoke(app, ["db", "attestation-key", "--key-id", "2027"])
    assert rotated.exit_code == 0, rotated.output
    assert "current key 2027 (older keys kept to verify: k1)" in rotated.output
    for line in path.read_text(encoding="ascii").splitlines():
        secret = line.split(":", 1)[1]
        assert secret not in made.output + rotated.output
    path.chmod(0o644)
    refused = runner.invoke(app, ["db", "attestation-key"])
    assert refused.exit_code == 1 and "chmod 600" in refused.output
    monkeypatch.delenv("PRESSROOM_ATTESTATION_KEYS")
    nowhere = runner.invoke(app, ["db", "attestation-key"])
    assert nowhere.exit_code == 2 and "PRESSROOM_ATTESTATION_KEYS" in nowhere.output


def test_db_sign_unsigned_signs_what_the_store_holds(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from artifacts import ArtifactKind, Principal, Scope, open_store

    url = f"sqlite+aiosqlite:///{home / 'pressroom.db'}"
    who = Principal(principal_id="alice", tenant="acme", project="news")

    async def put_unsigned() -> None:
        async with await open_store(url) as store:
            await store.put(ArtifactKind.DOCUMENT, "d", b"x", principal=who,
                            scope=Scope(tenant="acme", project="news", task="t"),
                            trust="trusted_state", parent_revision=None)

    asyncio.run(put_unsigned())
    refused = runner.invoke(app, ["db", "sign-unsigned"])
    assert refused.exit_code == 2 and "PRESSROOM_ATTESTATION_KEYS" in refused.output
    keys = home / "attestation.keys"
    assert runner.invoke(app, ["db", "attestation-key", str(keys)]).exit_code == 0
    monkeypatch.setenv("PRESSROOM_ATTESTATION_KEYS", str(keys))
    signed = runner.invoke(app, ["db", "sign-unsigned"])
    assert signed.exit_code == 0, signed.output
    assert "signed 1 unsigned revisions" in signed.output
    again = runner.invoke(app, ["db", "sign-unsigned", "--url", url])
    assert again.exit_code == 0 and "signed 0 unsigned revisions" in again.output
