"""What a research tool is: the one narrow interface every tool the agent may call
implements, and the context one call runs in.

Why this exists: tool calls were dispatched by an ``if``/``elif`` on the name in one place
and cited by another in a second, and only a ``read`` or ``search`` of a declared source
could become a note's evidence. Now a tool is one module implementing ``ResearchTool`` —
its arguments (one pydantic model, from which its definition is built), ``run``, which
lines of its result a note may cite (``citable_lines``) and what such a citation's
evidence is (``evidence``) — registered once in ``activities.research_tools.registry``
(docs/architecture.md#source-kinds-and-research-tools). A tool never sees the activity
that runs it: it gets a ``ToolContext`` with the job, the store and a way to look up
another tool (a note checks the results it cites through the tool that produced them).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

from activities.research_tools.arguments import Arguments, parse_with, schema_of
from activities.sources.kind import CitedRange
from activities.tool_errors import ToolRejected
from artifacts import Store
from context import ToolDefinition
from contracts.activity_messages import ToolApproval
from contracts.job_spec import JobSpec

#: ``read``: the call only reads (or writes the job's own state: a note, the plan);
#: ``write``: it acts outside the job, so it runs only with a signed approval (docs/mcp.md)
Effect = Literal["read", "write"]


@dataclass(frozen=True)
class ToolContext:
    """What one call may use: the worker's runtime (``activities.runtime.ActivityRuntime``:
    locations, roots, MCP servers), the store, the job's spec and principal, the call's id
    and full tool name, a signed approval if the call needed one, ``lookup`` — the
    registry's ``tool_named`` — and ``web_pages``, which gives the job's live web pages
    at their stored revisions (``activities.web_refresh``; fetched once, on first read)."""

    runtime: Any
    store: Store
    spec: JobSpec
    principal: Any
    call_id: str
    tool_name: str
    approval: ToolApproval | None
    lookup: Callable[[str], ResearchTool]
    web_pages: Callable[[], Awaitable[Any]]


class ResearchTool(Protocol):
    """One tool the research agent may call."""

    @property
    def name(self) -> str:
        """The name the model calls it by."""
        ...

    @property
    def effect(self) -> Effect:
        """Whether a call acts outside the job (``write``: only with a signed approval)."""
        ...

    def definition(self) -> ToolDefinition | None:
        """What the model is offered; ``None`` for a tool offered from elsewhere (an MCP
        tool's definition is the job's stored tool list, ``activities.mcp.listing``)."""
        ...

    def parse(self, raw: Any) -> Any:
        """The validated arguments; ``ToolRejected`` naming what is wrong."""
        ...

    async def run(self, ctx: ToolContext, arguments: Any) -> dict[str, Any]:
        """The call's JSON-able result; ``ToolRejected`` for a call that cannot run."""
        ...

    def citable_lines(self, arguments: Mapping[str, Any], content: Mapping[str, Any],
                      source: str, revision: str, path: str) -> dict[int, str]:
        """The lines (number → text) of ``path`` at ``revision`` in ``source`` that a
        successful result of this tool showed, so a note may cite them; empty if none."""
        ...

    def evidence(self, spec: JobSpec, source: str, cited: CitedRange) -> dict[str, Any]:
        """The ``EvidenceRecord`` fields (source type, locator, trust, authority …) of a
        note's citation of this tool's result."""
        ...


class ArgumentTool:
    """A tool whose arguments are one ``Arguments`` model and whose description is that
    model's docstring; its results show nothing a note may cite unless it says so."""

    name: ClassVar[str]
    arguments: ClassVar[type[Arguments]]
    effect: ClassVar[Effect] = "read"

    def definition(self) -> ToolDefinition | None:
        return ToolDefinition(name=self.name,
                              description=inspect.cleandoc(self.arguments.__doc__ or ""),
                              parameters=schema_of(self.arguments))

    def parse(self, raw: Any) -> Any:
        return parse_with(self.name, self.arguments, raw)

    def citable_lines(self, arguments: Mapping[str, Any], content: Mapping[str, Any],
                      source: str, revision: str, path: str) -> dict[int, str]:
        del arguments, content, source, revision, path
        return {}

    def evidence(self, spec: JobSpec, source: str, cited: CitedRange) -> dict[str, Any]:
        del spec, cited
        raise ToolRejected("citation_mismatch", f"a {self.name} result of {source!r} shows "
                                                "nothing a note can cite")
