"""``Store``: what code that reads and writes artifacts may call on a store.

``ArtifactStore`` is one; the worker's ``activities.store_access.WorkerStore`` (serialized
SQLite writes, cached pinned reads) is another. Code that is handed a store types it as
``Store`` rather than ``Any``, so a call the store does not offer, or one with a wrong
argument, is a type error rather than a failure at run time. Administration the callers
never do (``sign_unsigned``, the database itself) is not part of it.
"""

from __future__ import annotations

from typing import Any, Protocol

from artifacts.attestation import Verdict
from artifacts.types import ArtifactKind, ArtifactRecord, Principal, Scope

__all__ = ["Store"]


class Store(Protocol):
    """The artifact store's methods as callers use them (``artifacts.store.ArtifactStore``
    documents each)."""

    @property
    def engine_name(self) -> str: ...

    @property
    def attestation_key_id(self) -> str | None: ...

    def verify(self, record: ArtifactRecord) -> Verdict: ...

    async def close(self) -> None: ...

    async def put(
        self, kind: ArtifactKind | str, artifact_id: str, body: bytes, *,
        principal: Principal, scope: Scope, trust: str, parent_revision: int | None,
        media_type: str = ..., metadata: dict[str, Any] | None = ...,
    ) -> ArtifactRecord: ...

    async def get(
        self, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal,
        revision: int | None = ...,
    ) -> tuple[ArtifactRecord, bytes]: ...

    async def head(
        self, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal
    ) -> ArtifactRecord | None: ...

    async def history(
        self, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal
    ) -> list[ArtifactRecord]: ...

    async def put_manifest(
        self, manifest_id: str, *, run_id: str, step_id: str, status: str,
        body: dict[str, Any], scope: Scope, **columns: str | None,
    ) -> str: ...

    async def get_manifest(self, manifest_id: str, *,
                           principal: Principal) -> dict[str, Any]: ...

    async def manifest_summaries(
        self, run_id: str, *, principal: Principal
    ) -> list[dict[str, Any]]: ...

    async def record_usage(self, manifest_id: str, actual_input_tokens: int, *,
                           principal: Principal, cached_input_tokens: int | None = ...,
                           cache_write_input_tokens: int | None = ...) -> None: ...

    async def put_checkpoint(
        self, checkpoint_id: str, *, run_id: str, step_id: str, body: dict[str, Any],
        scope: Scope,
    ) -> str: ...

    async def latest_checkpoint(
        self, run_id: str, *, principal: Principal
    ) -> dict[str, Any] | None: ...

    async def put_receipt(
        self, receipt_key: str, *, body: dict[str, Any], scope: Scope
    ) -> dict[str, Any]: ...

    async def get_receipt(
        self, receipt_key: str, *, principal: Principal
    ) -> dict[str, Any] | None: ...
