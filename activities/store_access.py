"""How one worker process uses the artifact store: serialized SQLite writes, cached reads.

``WorkerStore`` wraps the store with the same methods and two worker-local policies:

* SQLite admits one writer. Concurrent activities otherwise queue inside SQLite's busy
  handler, which sleeps in growing steps (up to 100 ms) while the lock holder may itself
  wait for the event loop — measured at more than half of the wall time with 10 jobs in
  flight. So a worker's writes to SQLite take turns behind one asyncio lock.
* An artifact revision never changes, so a ``get`` naming an explicit revision is cached
  per worker (bounded by bytes). The first read went through the store's checks (scope,
  integrity re-hash); the key carries the reader's tenant and project, so a cached body is
  only ever returned to a reader the store would have shown it to. A revision this worker
  wrote is cached as it is written (the store hashed exactly those bytes), so the next
  activity of the job does not read back what this one just stored. A cache hit is still
  re-hashed against the record's content hash before it is returned.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from typing import Any

from artifacts import Store

_WRITES = frozenset({"put", "put_manifest", "record_usage", "put_checkpoint", "put_receipt"})
CACHE_BYTES = 64 * 1024 * 1024


class WorkerStore:
    def __init__(self, store: Store, *, cache_bytes: int = CACHE_BYTES) -> None:
        self._store = store
        self._write_lock = asyncio.Lock() if store.engine_name == "sqlite" else None
        self._cache: OrderedDict[tuple[str, ...], tuple[Any, bytes]] = OrderedDict()
        self._cached_bytes = 0
        self._cache_limit = cache_bytes

    async def get(self, kind: Any, artifact_id: str, *, principal: Any,
                  revision: int | None = None) -> tuple[Any, bytes]:
        if revision is None:  # "the head" moves; only pinned revisions are cacheable
            result: tuple[Any, bytes] = await self._store.get(kind, artifact_id,
                                                              principal=principal)
            return result
        key = (principal.tenant, principal.project, str(getattr(kind, "value", kind)),
               artifact_id, str(revision))
        hit = self._cache.get(key)
        if hit is not None:
            if "sha256:" + hashlib.sha256(hit[1]).hexdigest() == hit[0].content_hash:
                self._cache.move_to_end(key)
                return hit
            self._forget(key)  # never hand out bytes that fail their hash; ask the store
        rec, body = await self._store.get(kind, artifact_id, principal=principal,
                                          revision=revision)
        self._remember(key, rec, body)
        return rec, body

    async def put(self, kind: Any, artifact_id: str, body: bytes, **kwargs: Any) -> Any:
        """The store's ``put`` (serialized on SQLite); the new revision is cached."""
        if self._write_lock is None:
            rec = await self._store.put(kind, artifact_id, body, **kwargs)
        else:
            async with self._write_lock:
                rec = await self._store.put(kind, artifact_id, body, **kwargs)
        key = (rec.scope.tenant, rec.scope.project, str(getattr(rec.kind, "value", rec.kind)),
               rec.artifact_id, str(rec.revision))
        self._remember(key, rec, body)
        return rec

    def _remember(self, key: tuple[str, ...], rec: Any, body: bytes) -> None:
        if key in self._cache:
            self._forget(key)
        self._cache[key] = (rec, body)
        self._cached_bytes += len(body)
        while self._cached_bytes > self._cache_limit and self._cache:
            _k, (_r, old) = self._cache.popitem(last=False)
            self._cached_bytes -= len(old)

    def _forget(self, key: tuple[str, ...]) -> None:
        _rec, body = self._cache.pop(key)
        self._cached_bytes -= len(body)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name not in _WRITES or self._write_lock is None:
            return attr
        lock = self._write_lock

        async def serialized(*args: Any, **kwargs: Any) -> Any:
            async with lock:
                return await attr(*args, **kwargs)

        return serialized
