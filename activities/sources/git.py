"""The ``git`` source kind: a repository read at its pinned commit, never its work tree.

The tools see the files of the commit inside the spec's ``paths`` (``GitFiles``; a name
that is not UTF-8 is a listed exclusion), read
through the object database (``activities.sources.gitrepo``: ``git cat-file``, the clone
cache, the confinement rules of SECURITY.md); a note citing it names the commit, so its
evidence is repository evidence with the highest authority a source can have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from activities.call_budget import CallBudget
from activities.sources.errors import RetrievalFailed
from activities.sources.gitrepo import MAX_BLOB_BYTES, PinnedTree, in_scope, open_pinned
from activities.sources.kind import CitedRange, SourceAccess, decode_lines
from activities.tool_errors import ToolRejected
from context.vocabulary import SourceType, Trust
from contracts.path_safety import undecodable_name
from contracts.source_specs import GitSourceSpec


class GitFiles:
    """A repository at its pinned commit, limited to the spec's ``paths``."""

    def __init__(self, spec: GitSourceSpec, tree: PinnedTree) -> None:
        self.name = spec.name
        self._tree = tree
        scoped = sorted(p for p in tree.files if in_scope(p, spec.paths))
        # a committed name that is not UTF-8 (git stores bytes) cannot be shown, hashed or
        # stored as it is: it is listed as an exclusion under its \xNN spelling, never read
        self._excluded = [(shown, "name is not valid UTF-8; not read") for shown in
                          (undecodable_name(p) for p in scoped) if shown is not None]
        self._paths = [p for p in scoped if undecodable_name(p) is None]
        self._read: dict[str, bytes] = {}
        self._skipped: dict[str, str] = {}

    def paths(self) -> list[str]:
        return self._paths

    def excluded(self) -> list[tuple[str, str]]:
        return self._excluded

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
        return self._tree.sha, decode_lines(self.name, path, data)


class GitKind:
    """``kind: git``."""

    name = "git"
    spec_model = GitSourceSpec
    limit_type = SourceType.REPOSITORY_SOURCE

    async def open(self, spec: GitSourceSpec, access: SourceAccess) -> GitFiles:
        tree = await open_pinned(spec, access.locations, roots=access.roots)
        for declared in spec.paths:  # a declared path the commit lacks is a spec mistake
            if not any(in_scope(path, [declared]) for path in tree.files):
                raise RetrievalFailed(f"path {declared!r} does not exist at commit {tree.sha}")
        return GitFiles(spec, tree)

    def evidence(self, spec: GitSourceSpec, cited: CitedRange) -> dict[str, Any]:
        return {"source_type": SourceType.REPOSITORY_SOURCE, "repo": spec.name,
                "commit": cited.revision, "locator": f"{cited.path}#L{cited.start}-L{cited.end}",
                "trust": Trust.REPOSITORY_EVIDENCE, "authority": 3}
