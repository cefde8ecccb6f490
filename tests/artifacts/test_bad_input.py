"""Bad input gets a typed error naming the problem, and a failed write leaves nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import func, select, text

from artifacts import (
    ArtifactKind,
    ArtifactStore,
    DatabaseUnavailable,
    InvalidArtifact,
    Principal,
    Scope,
    StoreError,
    open_store,
)
from artifacts.blobio import CHUNK
from artifacts.tables import Artifact, Blob


def _put_kwargs(alice: Principal, scope: Scope) -> dict[str, Any]:
    return {"principal": alice, "scope": scope, "trust": "trusted_state",
            "parent_revision": None}


async def _counts(store: ArtifactStore) -> tuple[int, int]:
    async with store.db.read() as s:
        artifacts = await s.scalar(select(func.count()).select_from(Artifact))
        blobs = await s.scalar(select(func.count()).select_from(Blob))
    return int(artifacts or 0), int(blobs or 0)


async def test_unknown_kind(store: ArtifactStore, alice: Principal, scope: Scope) -> None:
    with pytest.raises(InvalidArtifact, match=r"unknown artifact kind 'memo'.*job_spec"):
        await store.put("memo", "x", b"x", **_put_kwargs(alice, scope))
    with pytest.raises(InvalidArtifact, match="unknown artifact kind"):
        await store.get("memo", "x", principal=alice)
    assert await _counts(store) == (0, 0)


@pytest.mark.parametrize(
    ("artifact_id", "problem"),
    [
        ("", "must not be empty"),
        ("a/b", "path separator"),
        ("..\\etc", "path separator"),
        ("..", "relative path component"),
        ("line\nbreak", "control character U\\+000A"),
        ("nul\x00byte", "control character U\\+0000"),
        ("bell\x07", "control character U\\+0007"),
        ("zero\u200bwidth", "control character U\\+200B"),
        (" padded", "whitespace"),
        ("x" * 256, "max 255"),
        (42, "must be a string, got int"),
    ],
)
async def test_bad_ids(
    store: ArtifactStore, alice: Principal, scope: Scope, artifact_id: Any, problem: str
) -> None:
    with pytest.raises(InvalidArtifact, match=problem):
        await store.put(ArtifactKind.DOCUMENT, artifact_id, b"x", **_put_kwargs(alice, scope))
    with pytest.raises(InvalidArtifact, match=problem):
        await store.get(ArtifactKind.DOCUMENT, artifact_id, principal=alice)
    with pytest.raises(InvalidArtifact, match=problem):
        await store.put_manifest(artifact_id, run_id="r", step_id="s", status="ready",
                                 body={}, scope=scope)
    assert await _counts(store) == (0, 0)


@pytest.mark.parametrize(
    ("bad_scope", "problem"),
    [
        ({"tenant": "acme", "project": "newsroom"}, "exactly tenant, project, task"),
        ({"tenant": "acme", "project": "newsroom", "task": "t", "x": 1}, "exactly tenant"),
        ({"tenant": "acme", "project": "a/b", "task": "t"}, "path separator"),
        ({"tenant": "", "project": "newsroom", "task": "t"}, "must not be empty"),
        ({"tenant": 1, "project": "newsroom", "task": "t"}, "tenant"),
        ("acme/newsroom/t", "got str"),
        (["acme", "newsroom", "t"], "got list"),
        (None, "got NoneType"),
    ],
)
async def test_bad_scope_shapes(
    store: ArtifactStore, alice: Principal, bad_scope: Any, problem: str
) -> None:
    with pytest.raises(InvalidArtifact, match=problem):
        await store.put(ArtifactKind.DOCUMENT, "d", b"x", principal=alice, scope=bad_scope,
                        trust="trusted_state", parent_revision=None)
    with pytest.raises(InvalidArtifact, match=problem):
        await store.put_receipt("r", body={}, scope=bad_scope)
    assert await _counts(store) == (0, 0)


async def test_scope_dict_is_accepted(store: ArtifactStore, alice: Principal) -> None:
    as_json: Any = {"tenant": "acme", "project": "newsroom", "task": "t"}  # not a Scope
    rec = await store.put(ArtifactKind.DOCUMENT, "d", b"x", principal=alice, scope=as_json,
                          trust="trusted_state", parent_revision=None)
    assert rec.scope == Scope(tenant="acme", project="newsroom", task="t")


def test_value_objects_reject_bad_fields() -> None:
    with pytest.raises(ValidationError, match="path separator"):
        Scope(tenant="a/b", project="p", task="t")
    with pytest.raises(ValidationError, match="control character"):
        Principal(principal_id="p\n", tenant="t", project="p")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("text", "got str \\(encode text first"),
        (bytearray(b"x"), "got bytearray"),
        (memoryview(b"x"), "got memoryview"),
        (None, "got NoneType"),
        (123, "got int"),
        ({"a": 1}, "got dict"),
    ],
)
async def test_non_bytes_bodies(
    store: ArtifactStore, alice: Principal, scope: Scope, body: Any, problem: str
) -> None:
    with pytest.raises(InvalidArtifact, match=f"body must be bytes, {problem}"):
        await store.put(ArtifactKind.DOCUMENT, "d", body, **_put_kwargs(alice, scope))
    assert await _counts(store) == (0, 0)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("principal", {"principal_id": "a", "tenant": "acme", "project": "newsroom"},
         "principal must be a Principal"),
        ("trust", "Trusted State", "trust label must be a lowercase token"),
        ("trust", "", "trust label"),
        ("parent_revision", 0, "parent_revision must be a positive int"),
        ("parent_revision", "1", "parent_revision must be a positive int"),
        ("parent_revision", True, "parent_revision must be a positive int"),
        ("media_type", "pdf", "media_type must look like"),
        ("metadata", {"when": object()}, "metadata is not JSON-serializable"),
        ("metadata", {"x": float("nan")}, "metadata is not JSON-serializable"),
        ("metadata", ["not", "a", "dict"], "metadata must be a dict"),
    ],
)
async def test_bad_put_arguments(
    store: ArtifactStore, alice: Principal, scope: Scope, field: str, value: Any, problem: str
) -> None:
    kwargs = _put_kwargs(alice, scope) | {field: value}
    with pytest.raises(InvalidArtifact, match=problem):
        await store.put(ArtifactKind.DOCUMENT, "d", b"x", **kwargs)
    assert await _counts(store) == (0, 0)


async def test_bad_json_record_bodies(store: ArtifactStore, scope: Scope) -> None:
    with pytest.raises(InvalidArtifact, match="manifest body must be a dict"):
        await store.put_manifest("m", run_id="r", step_id="s", status="ready",
                                 body=[1], scope=scope)  # type: ignore[arg-type]
    with pytest.raises(InvalidArtifact, match="manifest status"):
        await store.put_manifest("m", run_id="r", step_id="s", status="READY!",
                                 body={}, scope=scope)
    with pytest.raises(InvalidArtifact, match="checkpoint body is not JSON-serializable"):
        await store.put_checkpoint("c", run_id="r", step_id="s", body={"b": b"bytes"},
                                   scope=scope)
    with pytest.raises(InvalidArtifact, match="actual_input_tokens must be a non-negative"):
        await store.record_usage("m", -1, principal=Principal(principal_id="p", tenant="t",
                                                              project="q"))


async def test_unreachable_postgres_names_host() -> None:
    with pytest.raises(DatabaseUnavailable, match=r"127\.0\.0\.1:1/nowhere"):
        await open_store("postgresql+asyncpg://postgres@127.0.0.1:1/nowhere")


async def test_unresolvable_host_is_named() -> None:
    with pytest.raises(DatabaseUnavailable, match=r"no-such-host\.invalid:5432"):
        await open_store("postgresql+asyncpg://postgres@no-such-host.invalid:5432/x")


async def test_unopenable_sqlite_file_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(DatabaseUnavailable, match="a-file"):
        await open_store(f"sqlite+aiosqlite:///{blocker}/sub/store.db")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(DatabaseUnavailable, match=r"garbage\.db"):
        await open_store(f"sqlite+aiosqlite:///{garbage}")


async def test_unsupported_urls() -> None:
    with pytest.raises(DatabaseUnavailable, match="unsupported database engine 'mysql'"):
        await open_store("mysql://u@h/db")
    with pytest.raises(DatabaseUnavailable, match="cannot be parsed"):
        await open_store("::not a url::")
    with pytest.raises(DatabaseUnavailable, match="in-memory"):
        await open_store("sqlite+aiosqlite:///:memory:")


@pytest.mark.parametrize("size", [100, CHUNK + 1], ids=["small", "streamed"])
async def test_failed_write_leaves_no_blob_or_row(
    store: ArtifactStore, alice: Principal, scope: Scope, size: int
) -> None:
    """A real database failure after the blob insert (a trigger refusing the revision row)
    rolls the whole put back: no blob, no row, on the plain and the streamed blob path."""
    if store.engine_name == "sqlite":
        ddl = ["CREATE TRIGGER refuse BEFORE INSERT ON artifacts WHEN NEW.artifact_id = 'doomed' "
               "BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END"]
    else:
        ddl = [
            "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
            "IF NEW.artifact_id = 'doomed' THEN RAISE EXCEPTION 'refused by trigger' "
            "USING ERRCODE = 'check_violation'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
            "CREATE TRIGGER refuse BEFORE INSERT ON artifacts FOR EACH ROW "
            "EXECUTE FUNCTION refuse()",
        ]
    async with store.db.write() as s:
        for statement in ddl:
            await s.execute(text(statement))
    try:
        with pytest.raises(StoreError, match=r"refused by the database.*refused by trigger"):
            await store.put(ArtifactKind.DOCUMENT, "doomed", b"n" * size,
                            **_put_kwargs(alice, scope))
        assert await _counts(store) == (0, 0)
        await store.put(ArtifactKind.DOCUMENT, "fine", b"stored", **_put_kwargs(alice, scope))
        assert await _counts(store) == (1, 1)
    finally:
        async with store.db.write() as s:
            await s.execute(text("DROP TRIGGER refuse" if store.engine_name == "sqlite"
                                 else "DROP TRIGGER refuse ON artifacts"))
            if store.engine_name != "sqlite":
                await s.execute(text("DROP FUNCTION refuse()"))
