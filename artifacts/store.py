"""``ArtifactStore``: the store's public face, one transaction per call around the functions.

The store functions (``revisions``, ``sealed_records``) take an open transaction (``Tx``) so a
caller can group several operations in one (``Database.transaction``); this facade is the
simple path: each call is its own transaction, run whole on the database side (one
hand-off, see ``txrunner``), committed on success and rolled back on any error, so a failed
write leaves nothing behind.

Opened with a ``keyring`` (``artifacts.attestation``), the store signs every revision it
writes; reads return each revision's attestation as stored, and ``verify`` says whether it
is genuine. A read does not refuse an unsigned or badly signed revision: whoever admits
the content decides (Pressroom's context engine excludes it, see the integrity gate).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from artifacts import revisions, sealed_records
from artifacts.attestation import Keyring, Verdict, verify_record
from artifacts.database import Database, connect
from artifacts.errors import SchemaNotReady, StoreError
from artifacts.migrate import current_revision, head_revision, is_known_revision, upgrade
from artifacts.sqltx import Tx
from artifacts.types import ArtifactKind, ArtifactRecord, Principal, Scope

__all__ = ["ArtifactStore", "open_store"]

#: Larger bodies are written off the event loop (see ``txrunner``).
INLINE_BODY_BYTES = 1024 * 1024


async def open_store(url: str, *, migrate: bool | None = None,
                     keyring: Keyring | None = None) -> ArtifactStore:
    """Open the store at ``url`` (Pressroom's is ``settings.Settings.store_url``).

    ``migrate=None`` migrates SQLite to the shipped head on first use and, for a server
    database, requires ``pressroom db upgrade`` to have run (``SchemaNotReady`` otherwise);
    ``True`` always migrates, ``False`` never does. ``keyring``: sign every revision
    written and verify with it (``artifacts.attestation``); ``None`` writes unsigned ones.
    """
    db = await connect(url)
    try:
        auto = db.dialect.name == "sqlite" if migrate is None else migrate
        head = head_revision()
        current = await current_revision(db)
        if current is not None and not is_known_revision(current):
            raise SchemaNotReady(
                f"{db.dialect.target()} is at schema {current}, which this code does not "
                f"know (written by a newer Pressroom?); this code needs {head}"
            )
        if current != head:
            if not auto:
                raise SchemaNotReady(
                    f"{db.dialect.target()} is at schema {current or 'empty'}, this code "
                    f"needs {head}: run `pressroom db upgrade`"
                )
            await upgrade(db)
    except BaseException:
        await db.dispose()
        raise
    return ArtifactStore(db, keyring=keyring)


class ArtifactStore:
    """Versioned, content-addressed, scope-checked artifacts plus sealed JSON records."""

    def __init__(self, db: Database, *, keyring: Keyring | None = None) -> None:
        self.db = db
        self.keyring = keyring

    @property
    def attestation_key_id(self) -> str | None:
        """The key id new revisions are signed with; ``None``: they are written unsigned."""
        return self.keyring.current_key_id if self.keyring is not None else None

    def verify(self, record: ArtifactRecord) -> Verdict:
        """Whether ``record``'s attestation is genuine under this store's keyring
        (``unsigned`` without one); no database access."""
        return verify_record(self.keyring, record)

    @property
    def engine_name(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.db.dialect.name

    async def close(self) -> None:
        await self.db.dispose()

    async def __aenter__(self) -> ArtifactStore:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def put(
        self, kind: ArtifactKind | str, artifact_id: str, body: bytes, *,
        principal: Principal, scope: Scope, trust: str, parent_revision: int | None,
        media_type: str = "application/octet-stream", metadata: dict[str, Any] | None = None,
    ) -> ArtifactRecord:
        """Append a revision on ``parent_revision``; ``RevisionConflict`` if it is stale."""
        # Checked and hashed before the write transaction begins (a big body takes a while).
        prepared = revisions.prepare_put(
            kind, artifact_id, body, principal=principal, scope=scope, trust=trust,
            parent_revision=parent_revision, media_type=media_type, metadata=metadata,
        )
        return await self.db.call(True, revisions.insert_revision, prepared, self.keyring,
                                  offload=len(body) > INLINE_BODY_BYTES)

    async def get(
        self, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal,
        revision: int | None = None,
    ) -> tuple[ArtifactRecord, bytes]:
        """A revision (head by default) and its bytes, verified against the content hash."""
        return await self.db.call(False, revisions.get_artifact, kind, artifact_id,
                                  principal=principal, revision=revision)

    async def head(
        self, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal
    ) -> ArtifactRecord | None:
        return await self.db.call(False, revisions.head_artifact, kind, artifact_id,
                                  principal=principal)

    async def history(
        self, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal
    ) -> list[ArtifactRecord]:
        return await self.db.call(False, revisions.history, kind, artifact_id,
                                  principal=principal)

    async def sign_unsigned(self) -> int:
        """Sign every unsigned revision with the current key (``revisions.sign_unsigned``);
        returns how many were signed."""
        if self.keyring is None:
            raise StoreError("no attestation key configured: nothing to sign with")
        return await self.db.call(True, revisions.sign_unsigned, self.keyring)

    async def put_manifest(
        self, manifest_id: str, *, run_id: str, step_id: str, status: str,
        body: dict[str, Any], scope: Scope, **columns: str | None,
    ) -> str:
        def put(tx: Tx) -> str:  # the optional columns are not options of ``call``
            return sealed_records.put_manifest(tx, manifest_id, run_id=run_id, step_id=step_id,
                                        status=status, body=body, scope=scope, **columns)

        return await self.db.call(True, put)

    async def get_manifest(self, manifest_id: str, *, principal: Principal) -> dict[str, Any]:
        return await self.db.call(False, sealed_records.get_manifest, manifest_id,
                                  principal=principal)

    async def manifest_summaries(
        self, run_id: str, *, principal: Principal
    ) -> list[dict[str, Any]]:
        """The manifests of ``run_id`` without their bodies (``sealed_records``)."""
        return await self.db.call(False, sealed_records.manifest_summaries, run_id,
                                  principal=principal)

    async def record_usage(self, manifest_id: str, actual_input_tokens: int, *,
                           principal: Principal, cached_input_tokens: int | None = None,
                           cache_write_input_tokens: int | None = None) -> None:
        await self.db.call(True, sealed_records.record_usage, manifest_id, actual_input_tokens,
                           principal=principal, cached_input_tokens=cached_input_tokens,
                           cache_write_input_tokens=cache_write_input_tokens)

    async def put_checkpoint(
        self, checkpoint_id: str, *, run_id: str, step_id: str, body: dict[str, Any],
        scope: Scope,
    ) -> str:
        return await self.db.call(True, sealed_records.put_checkpoint, checkpoint_id, run_id=run_id,
                                  step_id=step_id, body=body, scope=scope)

    async def latest_checkpoint(
        self, run_id: str, *, principal: Principal
    ) -> dict[str, Any] | None:
        return await self.db.call(False, sealed_records.latest_checkpoint, run_id,
                                  principal=principal)

    async def checkpoints(
        self, run_id: str, *, principal: Principal
    ) -> list[dict[str, Any]]:
        """Every checkpoint body of ``run_id``, oldest first, each verified against its
        seal (``_body_hash`` holds that hash)."""
        return await self.db.call(False, sealed_records.checkpoints, run_id,
                                  principal=principal)

    async def put_receipt(
        self, receipt_key: str, *, body: dict[str, Any], scope: Scope
    ) -> dict[str, Any]:
        return await self.db.call(True, sealed_records.put_receipt, receipt_key, body=body,
                                  scope=scope)

    async def get_receipt(
        self, receipt_key: str, *, principal: Principal
    ) -> dict[str, Any] | None:
        return await self.db.call(False, sealed_records.get_receipt, receipt_key,
                                  principal=principal)
