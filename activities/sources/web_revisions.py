"""A live web page as versioned revisions in the artifact store: fetched once, read after.

Why: a page on the web changes between two reads, and a research job cites what it read.
If every ``search`` and ``read`` fetched the page again, two calls of one turn could see
two different pages, a note's line range could point at text that has since moved, and
nobody could later show what the model saw. So the worker fetches a live page
(``web_fetch.fetch_page``) the first time the job reads it and stores the bytes as a
revision of the artifact ``<job_id>:web:<source name>`` (kind ``web_page``) with what is
kept about the fetch — the URL asked for and the final one after redirects, when, from
which address, the status and the selected headers (``content-type``, ``etag``,
``last-modified`` …). Every later read of the job, by any worker, reads the newest stored
revision; its revision label is the sha256 of the bytes, as for a saved page, and that is
what a tool result, a note's citation and the evidence carry. ``pressroom resolve
--refresh-source NAME`` fetches a new revision (``refresh``); the old ones stay in the
store, so an earlier citation still names bytes that exist.

Writes go through ``put_once`` with a write id: a retry of the same refresh, or two
concurrent first reads, end with one revision (the loser reads the winner's). The fetch
itself is the only network step, and it runs under the operator's rules.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from activities.runtime import principal_of, put_once
from activities.sources.web_fetch import FetchedPage, fetch_page
from artifacts import Store
from contracts.job_spec import JobSpec
from contracts.source_specs import WebPageSourceSpec
from contracts.web_policy import WebFetchPolicy

KIND = "web_page"
_MEDIA = re.compile(r"^[A-Za-z0-9][\w.+-]*/[A-Za-z0-9][\w.+-]*$")

Fetcher = Callable[[str, WebFetchPolicy], Awaitable[FetchedPage]]


def revision_artifact_id(job_id: str, source_name: str) -> str:
    """The artifact whose revisions are one live page's fetches in one job."""
    return f"{job_id}:web:{source_name}"


@dataclass(frozen=True)
class PageRevision:
    """One stored fetch of a live page."""

    source_name: str
    url: str
    final_url: str
    fetched_at: str
    headers: dict[str, str]
    #: ``sha256:<hex>`` of the bytes: the revision tool results and citations name
    revision: str
    #: the store's revision number of the artifact
    store_revision: int
    body: bytes = field(repr=False)

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _of(record: Any, body: bytes, source_name: str) -> PageRevision:
    meta = record.metadata
    return PageRevision(source_name=source_name, url=str(meta.get("url", "")),
                        final_url=str(meta.get("final_url", "")),
                        fetched_at=str(meta.get("fetched_at", "")),
                        headers=dict(meta.get("headers") or {}),
                        revision="sha256:" + hashlib.sha256(body).hexdigest(),
                        store_revision=record.revision, body=body)


class WebPages:
    """The live pages of one job as this worker reads them: the stored revision, else
    one fetch stored as the first. ``locks`` (the runtime's, shared by the worker's calls)
    keeps two reads of one turn from fetching the same page twice."""

    def __init__(self, store: Store, spec: JobSpec, policy: WebFetchPolicy, *,
                 locks: dict[str, asyncio.Lock] | None = None,
                 fetcher: Fetcher = fetch_page) -> None:
        self._store, self._spec, self._policy = store, spec, policy
        self._principal = principal_of(spec)
        self._locks = locks if locks is not None else {}
        self._fetch = fetcher

    async def _read(self, record: Any, source_name: str) -> PageRevision:
        rec, body = await self._store.get(KIND, record.artifact_id, principal=self._principal,
                                          revision=record.revision)
        return _of(rec, body, source_name)

    async def current(self, source: WebPageSourceSpec) -> PageRevision:
        """The revision every read of ``source`` uses: the newest stored one for its URL;
        if there is none (or the spec's URL changed: ``resolve --add-source``), one fetch,
        stored. ``WebFetchRefused`` if the fetch is refused or fails."""
        artifact_id = revision_artifact_id(self._spec.job_id, source.name)
        lock = self._locks.setdefault(artifact_id, asyncio.Lock())
        async with lock:
            head = await self._store.head(KIND, artifact_id, principal=self._principal)
            if head is not None and head.metadata.get("url") == source.url:
                return await self._read(head, source.name)
            url_key = hashlib.sha256(source.url.encode()).hexdigest()[:16]
            return await self._fetch_and_store(
                source, head, f"web:{source.name}:after-{head.revision if head else 0}:"
                              f"{url_key}")

    async def refresh(self, source: WebPageSourceSpec, write_id: str) -> PageRevision:
        """Fetch ``source`` again and store it as a new revision, once per ``write_id``
        (a retried refresh finds its revision and fetches nothing)."""
        artifact_id = revision_artifact_id(self._spec.job_id, source.name)
        lock = self._locks.setdefault(artifact_id, asyncio.Lock())
        async with lock:
            history = await self._store.history(KIND, artifact_id, principal=self._principal)
            for rec in reversed(history):
                if rec.metadata.get("write_id") == write_id:
                    return await self._read(rec, source.name)
            return await self._fetch_and_store(source, history[-1] if history else None,
                                               write_id)

    async def _fetch_and_store(self, source: WebPageSourceSpec, head: Any,
                               write_id: str) -> PageRevision:
        page = await self._fetch(source.url, self._policy)
        content_type = page.headers.get("content-type", "").split(";", 1)[0].strip()
        media = content_type if _MEDIA.match(content_type) else "application/octet-stream"
        metadata = {"url": source.url, "final_url": page.final_url,
                    "fetched_at": page.fetched_at, "address": page.address,
                    "status": page.status, "headers": page.headers,
                    "redirects": page.redirects, "source_name": source.name}
        record = await put_once(self._store, KIND,
                                revision_artifact_id(self._spec.job_id, source.name),
                                page.body, spec=self._spec, trust="untrusted_external_data",
                                parent_revision=head.revision if head is not None else None,
                                write_id=write_id, media_type=media, metadata=metadata)
        if record.metadata.get("final_url") == page.final_url and \
                record.content_hash == "sha256:" + hashlib.sha256(page.body).hexdigest():
            return _of(record, page.body, source.name)
        return await self._read(record, source.name)  # another attempt's write won


__all__ = ["KIND", "PageRevision", "WebPages", "revision_artifact_id"]
