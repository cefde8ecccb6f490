"""The registry of research tools: the one place that maps a tool name to its tool.

Every dispatch of a call — running it (``activities.tool_call``), checking a note's
citations against the result it cites, turning a note into evidence
(``activities.record_turn``), the definitions offered to the model
(``TOOL_DEFINITIONS``) — asks ``tool_named``. A name that is neither registered nor an
operator-defined MCP tool (``mcp__<server>__<tool>``, ``activities.mcp.tool``) is refused
with ``unknown_tool``, a typed result the model sees; nothing falls through to another
tool. Adding a tool is one module implementing ``ResearchTool`` and its entry below
(docs/architecture.md#source-kinds-and-research-tools).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from activities.mcp.tool import McpTool, is_mcp
from activities.research_tools.finish import FinishTool
from activities.research_tools.listing import ListTool
from activities.research_tools.note import NoteTool
from activities.research_tools.plan import UpdatePlanTool
from activities.research_tools.read import ReadTool
from activities.research_tools.search import SearchTool
from activities.research_tools.source_tools import SourceCall, SourceTool
from activities.research_tools.tool import ResearchTool
from activities.tool_errors import ToolRejected
from context import ToolDefinition
from contracts.path_safety import PathRoots
from contracts.source_specs import SourceSpec

if TYPE_CHECKING:
    from activities.sources.web_revisions import WebPages


def _registry(*tools: ResearchTool) -> Mapping[str, ResearchTool]:
    registry: dict[str, ResearchTool] = {}
    for tool in tools:
        if tool.name in registry or is_mcp(tool.name):
            raise ValueError(f"research tool {tool.name!r} registered twice or as an MCP name")
        registry[tool.name] = tool
    return MappingProxyType(registry)


#: the job's own tools, by name, in the order the model is offered them
TOOLS: Mapping[str, ResearchTool] = _registry(
    ListTool(), SearchTool(), ReadTool(), NoteTool(), UpdatePlanTool(), FinishTool())


def tool_named(name: str) -> ResearchTool:
    """The tool called ``name``: a registered one, or an MCP server's tool by its full
    name; any other name is ``ToolRejected('unknown_tool')``."""
    tool = TOOLS.get(name)
    if tool is not None:
        return tool
    if is_mcp(name):
        return McpTool(name)
    raise ToolRejected("unknown_tool", f"no tool {name[:64]!r}; the tools are {sorted(TOOLS)}")


#: the definitions offered to the model, serialized by the provider adapters (an MCP
#: tool's definition comes from the job's stored tool list instead)
TOOL_DEFINITIONS: tuple[ToolDefinition, ...] = tuple(
    definition for definition in (tool.definition() for tool in TOOLS.values())
    if definition is not None)


def parse_arguments(tool_name: str, raw: Any) -> Any:
    """The validated arguments of one call of ``tool_name``; ``ToolRejected`` says what is
    wrong (an unknown tool among it)."""
    return tool_named(tool_name).parse(raw)


async def run_source_tool(tool_name: str, raw_arguments: Any, sources: Sequence[SourceSpec],
                          locations: Mapping[str, str], *,
                          read_limits: Mapping[str, int] | None = None,
                          roots: PathRoots | None = None,
                          web_pages: WebPages | None = None) -> dict[str, Any]:
    """Run one call of a tool that reads a declared source (``list``, ``search``,
    ``read``) outside an activity — benchmarks and tests; ``ToolRejected`` for a call that
    cannot run as asked.

    ``roots``: the worker's source roots (``contracts.path_safety``; none given:
    Pressroom's own folders from ``locations``); a location outside them is ``PathRefused``.
    ``read_limits`` maps a source kind to the most lines one ``read`` may return — the job
    policy's source limits; ``MAX_READ_LINES`` bounds every kind whatever the policy says.
    ``web_pages``: the job's live web pages at their stored revisions.
    """
    tool = tool_named(tool_name)
    arguments = tool.parse(raw_arguments)
    if not isinstance(tool, SourceTool):
        raise ToolRejected("unknown_tool", f"{tool_name!r} does not read a source")
    return await tool.run_in(SourceCall(sources=sources, locations=locations, roots=roots,
                                        read_limits=read_limits, web_pages=web_pages),
                             arguments)
