"""The files of one declared source, as the source tools may see them — and no others.

Why this exists: a tool call names a source and a path chosen by the model, which is
untrusted input. Every source kind is reduced here to the same narrow view — the relative
paths it holds, and the text lines of one of them — built only from what the job spec
declared: a git repository at its pinned commit (read through the object database, limited
to the spec's ``paths``), a document folder (regular, non-hidden documents under it), one
saved web page (its text), or one live web page at its stored revision (``LivePageFiles``;
fetched once under the operator's web rules, ``activities.sources.web_revisions``). A
path is normalized and checked before anything is read; ``..``, an absolute path or a path
outside the declared scope is refused with ``path_outside_source``.

Every file is read inside the worker's source roots (``contracts.path_safety``): a document
folder lists a symbolic link only when it leads to a file inside them, and what it leaves
out — a link out of the roots or to a folder, a FIFO, socket or device, a file over
``MAX_FILE_BYTES`` — it reports with the reason (``FolderFiles.excluded``; ``list`` shows
them), never silently. A declared location outside the roots is ``PathRefused``, a bad job
spec that fails the step.

Reading is split in two so that nothing blocking runs on the worker's event loop
(SECURITY.md, "A tool call cannot hold a worker"): ``prefetch`` does what is asynchronous
(a repository's blobs, streamed from git within the call's byte budget), ``load`` is plain
blocking code — a file read, decoding, a page's text — that the source tools call from a
worker thread. Both spend the call's ``CallBudget`` and record in it each file a limit
kept them from reading.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol

from activities.research_tools.budget import CallBudget
from activities.research_tools.rejected import ToolRejected
from activities.sources.documents import MAX_FILE_BYTES, document_files
from activities.sources.errors import RetrievalFailed
from activities.sources.gitrepo import MAX_BLOB_BYTES, PinnedTree, in_scope, open_pinned
from activities.sources.web_extract import html_to_lines
from activities.sources.webpages import (
    live_page_name,
    looks_like_html,
    page_lines,
    read_page,
    revision_charset,
    revision_is_html,
)
from contracts.errors import PathRefused, WebFetchRefused
from contracts.path_safety import PathRoots, existing_type, locate, read_file
from contracts.source_specs import (
    DocumentSourceSpec,
    GitSourceSpec,
    SourceSpec,
    WebPageSourceSpec,
    expand_location,
)

if TYPE_CHECKING:
    from activities.sources.web_revisions import PageRevision, WebPages


class SourceFiles(Protocol):
    """What a source tool can see of one declared source."""

    name: str

    def paths(self) -> list[str]:
        """Every readable file, as a relative POSIX path, sorted."""
        ...

    async def prefetch(self, paths: Sequence[str], budget: CallBudget) -> None:
        """Read ``paths`` ahead, within ``budget``, where that is asynchronous (a
        repository's blobs, in one streamed read); ``load`` reads the rest."""
        ...

    def load(self, path: str, budget: CallBudget) -> tuple[str, list[str]]:
        """The revision ``path`` (from ``paths``, prefetched) was read at and its text
        lines; blocking, so called from a worker thread. ``ToolRejected`` if it holds no
        text or a limit keeps it from being read (then recorded in ``budget``)."""
        ...

    def excluded(self) -> list[tuple[str, str]]:
        """Entries the source holds but a tool may not read, each with the reason."""
        ...


def confine(path: str) -> str:
    """``path`` normalized to a relative POSIX path inside a source ('' is its root)."""
    if "\\" in path or "\0" in path:
        raise ToolRejected("path_outside_source", f"path {path[:200]!r} is not a plain path")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise ToolRejected("path_outside_source",
                           f"path {path[:200]!r} must be relative and stay inside the source")
    normal = "/".join(part for part in pure.parts if part not in ("", "."))
    return normal


def _decode(name: str, path: str, data: bytes) -> list[str]:
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise ToolRejected("not_found", f"{name}:{path} is not UTF-8 text") from None


class GitFiles:
    """A repository at its pinned commit, limited to the spec's ``paths``."""

    def __init__(self, spec: GitSourceSpec, tree: PinnedTree) -> None:
        self.name = spec.name
        self._tree = tree
        self._paths = sorted(p for p in tree.files if in_scope(p, spec.paths))
        self._read: dict[str, bytes] = {}
        self._skipped: dict[str, str] = {}

    def paths(self) -> list[str]:
        return self._paths

    def excluded(self) -> list[tuple[str, str]]:
        return []

    async def prefetch(self, paths: Sequence[str], budget: CallBudget) -> None:
        # one streamed `git cat-file --batch` for every file a search will visit, not one
        # per file, and never more bytes than the call has left
        wanted = [p for p in paths if p not in self._read and p not in self._skipped]
        found = await self._tree.read_within(wanted, budget.max_bytes - budget.bytes_read)
        budget.spend(found.bytes_read)
        self._read.update(found.contents)
        for path, reason in found.skipped:
            self._skipped[path] = reason
            budget.skip(path, reason)

    def load(self, path: str, budget: CallBudget) -> tuple[str, list[str]]:
        size = self._tree.files[path][1]
        if size > MAX_BLOB_BYTES:
            raise ToolRejected("not_found", f"{self.name}:{path} is {size} bytes; files over "
                                            f"{MAX_BLOB_BYTES} are not read")
        data = self._read.pop(path, None)  # read once: dropped as soon as it is decoded
        if data is None:
            reason = self._skipped.get(path, "it was not read ahead")
            raise ToolRejected("arguments_over_limit", f"{self.name}:{path} is not read: "
                                                       f"{reason}")
        return self._tree.sha, _decode(self.name, path, data)


class FolderFiles:
    """The documents of a folder (or one document) inside the source roots."""

    def __init__(self, spec: DocumentSourceSpec, location: str, roots: PathRoots) -> None:
        self.name = spec.name
        try:
            _single, listing = document_files(location, roots)
        except RetrievalFailed:
            raise RetrievalFailed(f"document path of source {spec.name!r} does not "
                                  "exist") from None
        self._files = listing.files
        self._excluded = listing.excluded
        self._paths = sorted(self._files)

    def paths(self) -> list[str]:
        return self._paths

    def excluded(self) -> list[tuple[str, str]]:
        return self._excluded

    async def prefetch(self, paths: Sequence[str], budget: CallBudget) -> None:
        del paths, budget  # files are read as the search reaches them

    def load(self, path: str, budget: CallBudget) -> tuple[str, list[str]]:
        located = self._files[path]
        try:
            # the listing's size check is repeated by read_file; this one is the budget's
            size = os.lstat(located.real).st_size
        except OSError:
            size = 0  # read_file says what is wrong with it
        if not budget.fits(size):
            budget.skip(path, budget.over_budget())
            raise ToolRejected("arguments_over_limit", f"{self.name}:{path} is not read: "
                                                       f"{budget.over_budget()}")
        try:
            data = read_file(located, what=f"{self.name}:{path}",
                             max_bytes=min(MAX_FILE_BYTES, budget.max_bytes - budget.bytes_read))
        except PathRefused as exc:
            raise ToolRejected("not_found", f"{self.name}:{path} is not read: {exc}") from None
        except OSError as exc:
            raise ToolRejected("not_found", f"{self.name}:{path} cannot be read "
                                            f"({exc.strerror})") from None
        budget.spend(len(data))
        return "sha256:" + hashlib.sha256(data).hexdigest(), _decode(self.name, path, data)


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
        text = "\n".join(_decode(self.name, path, data))
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


async def _open_live(spec: WebPageSourceSpec, web_pages: WebPages | None) -> LivePageFiles:
    if web_pages is None:
        raise ToolRejected("source_unavailable", f"source {spec.name!r} is a live web page "
                                                 "and this call has no web fetcher")
    try:
        return LivePageFiles(spec, await web_pages.current(spec))
    except WebFetchRefused as exc:
        # the refusal names the URL, address or limit and the rule, never the response
        raise ToolRejected("source_unavailable", f"source {spec.name!r}: {exc.message}"
                           ) from None


async def open_source(spec: SourceSpec, locations: Mapping[str, str],
                      roots: PathRoots | None = None, *,
                      web_pages: WebPages | None = None) -> SourceFiles:
    """The view of ``spec``; ``ToolRejected('source_unavailable')`` if it cannot be read,
    ``PathRefused`` if its location is outside ``roots`` (the worker's source roots; none
    given: Pressroom's own folders) or may not be read at all. A live web page is read
    from its stored revision through ``web_pages`` (fetched once, on first read)."""
    roots = roots or PathRoots.default(locations)
    if isinstance(spec, WebPageSourceSpec) and spec.path is None:
        return await _open_live(spec, web_pages)
    try:
        if isinstance(spec, GitSourceSpec):
            return GitFiles(spec, await open_pinned(spec, locations, roots=roots))
        # a folder is listed (a stat per entry) and a page located in a worker thread:
        # blocking file-system work stays off the event loop
        if isinstance(spec, DocumentSourceSpec):
            return await asyncio.to_thread(FolderFiles, spec,
                                           expand_location(spec.path, locations), roots)
        assert spec.path is not None  # a live page was opened above
        return await asyncio.to_thread(PageFiles, spec, expand_location(spec.path, locations),
                                       roots)
    except RetrievalFailed as exc:
        raise ToolRejected("source_unavailable", f"source {spec.name!r}: {exc}") from None


def declared(sources: Sequence[SourceSpec], name: str) -> SourceSpec:
    """The job's source called ``name``; any other name is ``undeclared_source``."""
    for spec in sources:
        if spec.name == name:
            return spec
    raise ToolRejected("undeclared_source",
                       f"no source {name[:64]!r} in this job; its sources are "
                       f"{sorted(spec.name for spec in sources)}")
