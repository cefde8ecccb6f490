"""The ``web_page`` source kind: a saved copy of a page (``path:``), or the live page at
``url:``, fetched once under the operator's web rules and read from its stored revision.

The tools see one file: the page's visible text (``PageFiles`` for a saved copy,
``LivePageFiles`` for a live page, named from its final URL). Every read of a live page in
a job sees the same bytes until ``resolve --refresh-source`` stores a new revision
(docs/architecture.md#live-web-pages). A page is untrusted external data whatever it
says, so its evidence has no authority.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from activities.call_budget import CallBudget
from activities.sources.errors import RetrievalFailed
from activities.sources.kind import CitedRange, SourceAccess, SourceFiles, decode_lines
from activities.sources.web_extract import html_to_lines
from activities.sources.webpages import (
    live_page_name,
    looks_like_html,
    page_lines,
    read_page,
    revision_charset,
    revision_is_html,
)
from activities.tool_errors import ToolRejected
from context import SourceType, Trust
from contracts.errors import PathRefused, WebFetchRefused
from contracts.path_safety import PathRoots, existing_type, locate
from contracts.source_specs import WebPageSourceSpec, expand_location

if TYPE_CHECKING:
    from activities.sources.web_revisions import PageRevision


class PageFiles:
    """One saved web page: its visible text, under the page's file name."""

    def __init__(self, spec: WebPageSourceSpec, location: str, roots: PathRoots) -> None:
        self.name = spec.name
        self._location, self._roots = location, roots
        self._path = Path(location)
        located = locate(location, roots, "source", what=f"saved web page of {spec.name!r}")
        if existing_type(located.real) == "missing":
            raise RetrievalFailed(f"saved web page of source {spec.name!r} does not exist")

    def paths(self) -> list[str]:
        return [self._path.name]

    def excluded(self) -> list[tuple[str, str]]:
        return []

    async def prefetch(self, paths: Sequence[str], budget: CallBudget) -> None:
        del paths, budget  # one page, read when asked

    def load(self, path: str, budget: CallBudget) -> tuple[str, list[str]]:
        try:
            data, _named = read_page(self._location, self._roots)
        except (PathRefused, RetrievalFailed) as exc:
            raise ToolRejected("not_found", f"{self.name}:{path} is not read: {exc}") from None
        budget.spend(len(data))  # one page, bounded by read_page's own size limit
        text = "\n".join(decode_lines(self.name, path, data))
        lines = html_to_lines(text) if looks_like_html(self._path, text) else text.splitlines()
        return "sha256:" + hashlib.sha256(data).hexdigest(), lines


class LivePageFiles:
    """One live web page at its stored revision (``web_revisions``): its text, under one
    file name taken from its final URL. Every read of the job sees the same bytes until
    ``resolve --refresh-source`` stores a new revision."""

    def __init__(self, spec: WebPageSourceSpec, revision: PageRevision) -> None:
        self.name = spec.name
        self._revision = revision
        self._path = live_page_name(revision)

    def paths(self) -> list[str]:
        return [self._path]

    def excluded(self) -> list[tuple[str, str]]:
        return []

    async def prefetch(self, paths: Sequence[str], budget: CallBudget) -> None:
        del paths, budget  # the revision is already read from the store

    def load(self, path: str, budget: CallBudget) -> tuple[str, list[str]]:
        data = self._revision.body
        budget.spend(len(data))  # one page, bounded by the fetch's own size limit
        try:
            lines = page_lines(path, data, html=revision_is_html(self._revision),
                               charset=revision_charset(self._revision))
        except RetrievalFailed as exc:
            raise ToolRejected("not_found", f"{self.name}:{path} is not read: {exc}") from None
        return self._revision.revision, lines


class WebPageKind:
    """``kind: web_page``."""

    name = "web_page"
    spec_model = WebPageSourceSpec
    limit_type = SourceType.WEB_PAGE

    async def open(self, spec: WebPageSourceSpec, access: SourceAccess) -> SourceFiles:
        if spec.path is None:
            return await self._open_live(spec, access)
        # the page is located in a worker thread: blocking file-system work stays off the
        # event loop
        return await asyncio.to_thread(PageFiles, spec,
                                       expand_location(spec.path, access.locations),
                                       access.roots)

    @staticmethod
    async def _open_live(spec: WebPageSourceSpec, access: SourceAccess) -> LivePageFiles:
        if access.web_pages is None:
            raise ToolRejected("source_unavailable", f"source {spec.name!r} is a live web "
                                                     "page and this call has no web fetcher")
        try:
            return LivePageFiles(spec, await access.web_pages.current(spec))
        except WebFetchRefused as exc:
            # the refusal names the URL, address or limit and the rule, never the response
            raise ToolRejected("source_unavailable", f"source {spec.name!r}: {exc.message}"
                               ) from None

    def evidence(self, spec: WebPageSourceSpec, cited: CitedRange) -> dict[str, Any]:
        return {"source_type": SourceType.WEB_PAGE, "url": spec.url,
                "locator": f"L{cited.start}-L{cited.end}",
                "trust": Trust.UNTRUSTED_EXTERNAL_DATA, "authority": 0}
