"""What the tools that read a declared source — ``list``, ``search``, ``read`` — share.

The call's arguments are validated (``arguments``), its source must be one the job
declared and its paths must stay inside that source (``source_files``); only then is
anything read, through the source's kind (``activities.sources.registry``). The result is
a JSON-able dict that names the source and the revision each line was read at (a commit
sha, or the file's content hash), so a note can cite exactly what the model saw; a note's
citation of it becomes evidence of the source's own kind (``SourceKind.evidence``). Bad
input raises ``ToolRejected``; the caller records it as an error result for the model,
never as a crash.

A call cannot hold its worker (SECURITY.md, "A tool call cannot hold a worker"): each call
has one ``CallBudget`` — ``MAX_REGEX_SECONDS`` of matching over all its lines and files,
``MAX_CALL_BYTES`` of content read — and its blocking part (reading files, decoding,
matching) runs in a worker thread, so the event loop keeps heartbeating and serving the
worker's other jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from activities.job_policy import job_policy
from activities.research_tools.arguments import Arguments
from activities.research_tools.source_files import SourceFiles, declared, open_source
from activities.research_tools.tool import ArgumentTool, ToolContext
from activities.sources.kind import CitedRange
from activities.sources.registry import SOURCE_KINDS, source_kind
from contracts.job_spec import JobSpec
from contracts.path_safety import PathRoots
from contracts.source_specs import SourceSpec

if TYPE_CHECKING:
    from activities.sources.web_revisions import WebPages


def read_limits(spec: JobSpec, roots: PathRoots) -> dict[str, int]:
    """The most lines one ``read`` returns per source kind: the job policy's source limit
    for the kind's ``limit_type`` (docs/context-engine.md), the same bound its assembly
    puts on an excerpt. A policy file is read inside ``roots`` (``activities.job_policy``)."""
    policy = job_policy(spec.policy, roots)
    limits = {}
    for name, kind in SOURCE_KINDS.items():
        limit = policy.source_limits.get(kind.limit_type)
        if limit is not None and limit.max_lines:
            limits[name] = limit.max_lines
    return limits


@dataclass(frozen=True)
class SourceCall:
    """Where a source tool call reads: the job's declared sources, the worker's locations
    and source roots, the job policy's read limits per kind, its live web pages."""

    sources: Sequence[SourceSpec]
    locations: Mapping[str, str]
    roots: PathRoots | None = None
    read_limits: Mapping[str, int] | None = None
    web_pages: WebPages | None = None

    @staticmethod
    async def of(ctx: ToolContext) -> SourceCall:
        roots: PathRoots = ctx.runtime.roots_for(ctx.spec)
        return SourceCall(sources=ctx.spec.sources, locations=ctx.runtime.locations,
                          roots=roots, read_limits=read_limits(ctx.spec, roots),
                          web_pages=await ctx.web_pages())


class SourceTool(ArgumentTool):
    """A tool over one declared source: its arguments name the source (``source``)."""

    async def run(self, ctx: ToolContext, arguments: Any) -> dict[str, Any]:
        return await self.run_in(await SourceCall.of(ctx), arguments)

    async def run_in(self, call: SourceCall, arguments: Any) -> dict[str, Any]:
        """Run over ``call``'s sources: the declared source opened by its kind."""
        source = declared(call.sources, arguments.source)
        self.check_limits(source, arguments, call.read_limits or {})
        files = await open_source(source, call.locations, call.roots,
                                  web_pages=call.web_pages)
        return await self.over(files, arguments)

    def check_limits(self, source: SourceSpec, arguments: Arguments,
                     limits: Mapping[str, int]) -> None:
        """A limit the job's policy sets for this kind of source; ``ToolRejected``."""
        del source, arguments, limits

    async def over(self, files: SourceFiles, arguments: Any) -> dict[str, Any]:
        """The result of the call over the opened source."""
        raise NotImplementedError

    def evidence(self, spec: JobSpec, source: str, cited: CitedRange) -> dict[str, Any]:
        declared_source = declared(spec.sources, source)
        return {"security_class": declared_source.security_class,
                **source_kind(declared_source).evidence(declared_source, cited)}


__all__ = ["SourceCall", "SourceTool", "read_limits"]
