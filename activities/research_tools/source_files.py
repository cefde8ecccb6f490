"""The files of one declared source, as the source tools may see them — and no others.

Each kind of source is opened by its registered reader (``activities.sources.registry``;
the kinds' modules are ``activities/sources/git.py``, ``document.py`` and
``web_page.py``); this module finds the declared source a call names, opens it through the
registry, and confines the model's paths to it.

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

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from activities.sources.errors import RetrievalFailed
from activities.sources.kind import SourceAccess, SourceFiles
from activities.sources.registry import source_kind
from activities.tool_errors import ToolRejected
from contracts.path_safety import PathRoots
from contracts.source_specs import SourceSpec

if TYPE_CHECKING:
    from activities.sources.web_revisions import WebPages

__all__ = ["SourceFiles", "confine", "declared", "open_source"]


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


async def open_source(spec: SourceSpec, locations: Mapping[str, str],
                      roots: PathRoots | None = None, *,
                      web_pages: WebPages | None = None) -> SourceFiles:
    """The view of ``spec`` its kind's reader gives (``activities.sources.registry``);
    ``ToolRejected('source_unavailable')`` if it cannot be read, ``PathRefused`` if its
    location is outside ``roots`` (the worker's source roots; none given: Pressroom's own
    folders) or may not be read at all, ``UnknownSourceKind`` for a kind no reader is
    registered for. A live web page is read from its stored revision through
    ``web_pages`` (fetched once, on first read)."""
    kind = source_kind(spec)
    access = SourceAccess(locations=locations, roots=roots or PathRoots.default(locations),
                          web_pages=web_pages)
    try:
        return await kind.open(spec, access)
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
