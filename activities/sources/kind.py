"""What a source kind is: the one narrow interface every kind of source implements.

Why this exists: a job's sources were read, cited and described by four separate
dispatches on ``kind``, each ending in an ``else`` that quietly treated an unknown kind as
the last one it knew. Now a kind is one module (``activities/sources/git.py``,
``document.py``, ``web_page.py``) implementing ``SourceKind``, registered once in
``activities.sources.registry``; every reader of a source asks the registry, and a kind it
does not hold is a typed error (``UnknownSourceKind``), never a fallback
(docs/architecture.md#source-kinds-and-research-tools).

A kind says four things: its spec model (``contracts.source_specs``, which the workflow
carries), which of the job policy's source limits bounds one read of it, how it is opened
for the research tools (``SourceFiles``: its relative paths and the text lines of one of
them at the revision it was read at), and what the evidence of a note citing it looks like
(``evidence``: the source type, locator, trust and authority of an ``EvidenceRecord``).
Paths are checked inside the operator's roots by whoever opens the source (``open``
receives the roots in ``SourceAccess``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from activities.call_budget import CallBudget
from activities.tool_errors import ToolRejected
from context import SourceType
from contracts.path_safety import PathRoots

if TYPE_CHECKING:
    from activities.sources.web_revisions import WebPages


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


@dataclass(frozen=True)
class SourceAccess:
    """Where a source may be read from on this worker: the placeholder values
    (``Settings.locations``), the operator's source roots, and the job's live web pages at
    their stored revisions (``None``: this call cannot fetch one)."""

    locations: Mapping[str, str]
    roots: PathRoots
    web_pages: WebPages | None = None


@dataclass(frozen=True)
class CitedRange:
    """Lines of one file of a source that a verified note cites, at the revision the
    cited result reported."""

    path: str
    start: int
    end: int
    revision: str


class SourceKind(Protocol):
    """One kind of source (``kind:`` in a job spec)."""

    #: the ``kind:`` value; equal to its spec model's discriminator
    name: str
    #: the spec model (``contracts.source_specs``)
    spec_model: type[Any]
    #: which of the job policy's source limits bounds one ``read`` of this kind
    limit_type: SourceType

    async def open(self, spec: Any, access: SourceAccess) -> SourceFiles:
        """The tools' view of ``spec``; ``RetrievalFailed`` if it cannot be read,
        ``PathRefused`` if its location is outside the roots."""
        ...

    def evidence(self, spec: Any, cited: CitedRange) -> dict[str, Any]:
        """The ``EvidenceRecord`` fields a note's citation of ``spec`` gets beyond the
        common ones: source type, locator, trust, authority, and the kind's own (a
        repository and commit, a URL)."""
        ...


def decode_lines(name: str, path: str, data: bytes) -> list[str]:
    """``data`` as text lines; a file that is not UTF-8 holds no lines a tool can show."""
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise ToolRejected("not_found", f"{name}:{path} is not UTF-8 text") from None
