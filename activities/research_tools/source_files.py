"""The files of one declared source, as the source tools may see them — and no others.

Why this exists: a tool call names a source and a path chosen by the model, which is
untrusted input. Every source kind is reduced here to the same narrow view — the relative
paths it holds, and the text lines of one of them — built only from what the job spec
declared: a git repository at its pinned commit (read through the object database, limited
to the spec's ``paths``), a document folder (regular, non-hidden documents under it; a
symbolic link is never followed), or one saved web page (its visible text). A path is
normalized and checked before anything is read; ``..``, an absolute path or a path outside
the declared scope is refused with ``path_outside_source``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol

from activities.research_tools.rejected import ToolRejected
from activities.sources.documents import MAX_FILE_BYTES, SUFFIXES
from activities.sources.errors import RetrievalFailed
from activities.sources.gitrepo import MAX_BLOB_BYTES, PinnedTree, in_scope, open_pinned
from activities.sources.webpages import MAX_PAGE_BYTES, html_to_lines, looks_like_html
from contracts.source_specs import (
    DocumentSourceSpec,
    GitSourceSpec,
    SourceSpec,
    WebPageSourceSpec,
    expand_location,
)


class SourceFiles(Protocol):
    """What a source tool can see of one declared source."""

    name: str

    def paths(self) -> list[str]:
        """Every readable file, as a relative POSIX path, sorted."""
        ...

    async def lines(self, path: str) -> tuple[str, list[str]]:
        """The revision ``path`` was read at and its text lines (``path`` from ``paths``)."""
        ...

    async def prefetch(self, paths: Sequence[str]) -> None:
        """Read ``paths`` ahead in one go where that is cheaper (a search over many files)."""
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

    def paths(self) -> list[str]:
        return self._paths

    async def prefetch(self, paths: Sequence[str]) -> None:
        # one `git cat-file --batch` for every file a search will visit, not one per file
        wanted = [p for p in paths if p not in self._read
                  and self._tree.files[p][1] <= MAX_BLOB_BYTES]
        self._read.update(await self._tree.read(wanted))

    async def lines(self, path: str) -> tuple[str, list[str]]:
        size = self._tree.files[path][1]
        if size > MAX_BLOB_BYTES:
            raise ToolRejected("not_found", f"{self.name}:{path} is {size} bytes; files over "
                                            f"{MAX_BLOB_BYTES} are not read")
        data = self._read.get(path)
        if data is None:
            data = (await self._tree.read([path]))[path]
        return self._tree.sha, _decode(self.name, path, data)


class FolderFiles:
    """The documents of a folder (or one document), never through a symbolic link."""

    def __init__(self, spec: DocumentSourceSpec, root: Path) -> None:
        self.name = spec.name
        if root.is_file() and not root.is_symlink():
            self._files = {root.name: root}
        elif root.is_dir() and not root.is_symlink():
            inside = root.resolve()
            self._files = {
                file.relative_to(root).as_posix(): file for file in sorted(root.rglob("*"))
                if file.suffix.lower() in SUFFIXES and file.is_file() and not file.is_symlink()
                and not any(part.startswith(".") for part in file.relative_to(root).parts)
                # a file reached through a linked folder must still resolve inside the root
                and inside in file.resolve().parents
            }
        else:
            raise RetrievalFailed(f"document path of source {spec.name!r} does not exist "
                                  "(or is a symbolic link, which is never followed)")
        self._paths = sorted(self._files)

    def paths(self) -> list[str]:
        return self._paths

    async def prefetch(self, paths: Sequence[str]) -> None:
        del paths  # files are read as the search reaches them

    async def lines(self, path: str) -> tuple[str, list[str]]:
        data = self._files[path].read_bytes()
        if len(data) > MAX_FILE_BYTES:
            raise ToolRejected("not_found", f"{self.name}:{path} is {len(data)} bytes; files "
                                            f"over {MAX_FILE_BYTES} are not read")
        return "sha256:" + hashlib.sha256(data).hexdigest(), _decode(self.name, path, data)


class PageFiles:
    """One saved web page: its visible text, under the page's file name."""

    def __init__(self, spec: WebPageSourceSpec, path: Path) -> None:
        self.name = spec.name
        if not path.is_file() or path.is_symlink():
            raise RetrievalFailed(f"saved web page of source {spec.name!r} does not exist "
                                  "(or is a symbolic link, which is never followed)")
        self._path = path

    def paths(self) -> list[str]:
        return [self._path.name]

    async def prefetch(self, paths: Sequence[str]) -> None:
        del paths  # one page, read when asked

    async def lines(self, path: str) -> tuple[str, list[str]]:
        data = self._path.read_bytes()
        if len(data) > MAX_PAGE_BYTES:
            raise ToolRejected("not_found", f"{self.name}:{path} is {len(data)} bytes; pages "
                                            f"over {MAX_PAGE_BYTES} are not read")
        text = "\n".join(_decode(self.name, path, data))
        lines = html_to_lines(text) if looks_like_html(self._path, text) else text.splitlines()
        return "sha256:" + hashlib.sha256(data).hexdigest(), lines


async def open_source(spec: SourceSpec, locations: Mapping[str, str]) -> SourceFiles:
    """The view of ``spec``; ``ToolRejected('source_unavailable')`` if it cannot be read."""
    try:
        if isinstance(spec, GitSourceSpec):
            return GitFiles(spec, await open_pinned(spec, locations))
        if isinstance(spec, DocumentSourceSpec):
            return FolderFiles(spec, Path(expand_location(spec.path, locations)))
        return PageFiles(spec, Path(expand_location(spec.path, locations)))
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
