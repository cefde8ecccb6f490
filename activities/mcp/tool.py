"""An operator-defined MCP server's tool as a research tool (docs/mcp.md).

Why one family instead of one module per tool: the tools are the servers', named
``mcp__<server>__<tool>`` and offered from the job's stored tool list
(``listing.tool_definitions``), so the registry (``activities.research_tools.registry``)
answers every such name with an ``McpTool`` and the call itself decides, from the grant
and the recorded list, whether it may run (``calls.run_mcp_call``).

What a note may cite: an MCP result is stored shaped like a ``read`` result
(``calls.gated_content``), so a citation of it names the call, the tool's full name as its
source, the result's sha256 as its revision, ``result`` as its path and a line range, and
every cited line must have been in the stored result. Its evidence is untrusted external
data with no authority (SECURITY.md, "11. MCP servers"): a tool result, never a declared
source. An MCP tool's effect (``read`` or ``write``) is the operator's word for it
(``contracts.mcp_servers``), read from the job's recorded tool list when it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from activities.tool_errors import ToolRejected
from context import SourceType, ToolDefinition, Trust
from contracts.job_spec import JobSpec
from contracts.mcp_servers import split_tool_name

if TYPE_CHECKING:
    from activities.research_tools.tool import Effect, ToolContext
    from activities.sources.kind import CitedRange


def is_mcp(name: str) -> bool:
    """Whether ``name`` is an MCP tool's full name (``mcp__<server>__<tool>``)."""
    return split_tool_name(name) is not None


class McpTool:
    """One ``mcp__<server>__<tool>`` name."""

    #: the operator's word decides per call (``calls.run_mcp_call`` asks for approval)
    effect: Effect = "read"

    def __init__(self, name: str) -> None:
        self.name = name

    def definition(self) -> ToolDefinition | None:
        return None  # offered from the job's stored tool list (``listing``)

    def parse(self, raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise ToolRejected("malformed_arguments",
                               f"{self.name} takes an object, got {type(raw).__name__}")
        return raw  # the server checks them against its own schema

    async def run(self, ctx: ToolContext, arguments: Any) -> dict[str, Any]:
        # imported here: the MCP SDK is a second's import, and every process that imports
        # the tool registry (a helper process before its parent-death guard is set, the
        # CLI) would pay it without ever calling a server
        from activities.mcp.calls import run_mcp_call

        return await run_mcp_call(ctx.runtime, ctx.store, ctx.spec, ctx.call_id, self.name,
                                  arguments, ctx.approval)

    def citable_lines(self, arguments: Mapping[str, Any], content: Mapping[str, Any],
                      source: str, revision: str, path: str) -> dict[int, str]:
        del arguments
        if (source != self.name or content.get("path") != path
                or content.get("revision") != revision):
            return {}
        first = int(content["start_line"])
        return {first + offset: str(text) for offset, text in enumerate(content["lines"])}

    def evidence(self, spec: JobSpec, source: str, cited: CitedRange) -> dict[str, Any]:
        del spec
        # cited like a document's lines (``<name>:<path>#La-Lb``), so a draft cites the range
        return {"source_type": SourceType.TOOL_RESULT,
                "locator": f"{source}:result#L{cited.start}-L{cited.end}",
                "trust": Trust.UNTRUSTED_EXTERNAL_DATA, "authority": 0}
