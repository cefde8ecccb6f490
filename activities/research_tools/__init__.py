"""The research agent's tools: ``list``, ``search`` and ``read`` over the job's declared
sources at their pinned revisions, ``note`` (a finding whose citations are verified against
the stored results they name), ``update_plan`` and ``finish`` — one module each,
registered in ``registry`` beside the operator's MCP tools (``activities.mcp.tool``).
``activities.tool_call`` runs one call as an activity; the research loop
(docs/architecture.md#the-research-loop) offers them to the model turn by turn.

``tool_named(name)`` is the tool; ``run_source_tool(name, arguments, sources, locations,
read_limits=…)`` runs one source call outside an activity and returns a JSON-able result
(``search_hits`` reads a search result's hits back); a call that cannot run as asked —
unknown tool, malformed arguments, arguments over a limit, an undeclared source, a path
outside the source — raises ``ToolRejected`` with a ``kind`` and a one-line ``detail``, to
be recorded as a typed error result the model sees next turn. ``TOOL_DEFINITIONS`` are the
definitions the provider adapters serialize.
"""

from activities.call_budget import MAX_CALL_BYTES, MAX_REGEX_SECONDS, CallBudget
from activities.research_tools.arguments import (
    MAX_HITS,
    MAX_LIST_ENTRIES,
    MAX_QUERY_CHARS,
    MAX_READ_LINES,
)
from activities.research_tools.finish import FinishArguments
from activities.research_tools.listing import ListArguments
from activities.research_tools.note import Citation, NoteArguments, verify_note
from activities.research_tools.plan import UpdatePlanArguments
from activities.research_tools.read import ReadArguments
from activities.research_tools.registry import (
    TOOL_DEFINITIONS,
    TOOLS,
    parse_arguments,
    run_source_tool,
    tool_named,
)
from activities.research_tools.search import SearchArguments, search_hits
from activities.research_tools.tool import ResearchTool, ToolContext
from activities.tool_errors import RejectionKind, ToolRejected

__all__ = [
    "MAX_CALL_BYTES",
    "MAX_HITS",
    "MAX_LIST_ENTRIES",
    "MAX_QUERY_CHARS",
    "MAX_READ_LINES",
    "MAX_REGEX_SECONDS",
    "TOOLS",
    "TOOL_DEFINITIONS",
    "CallBudget",
    "Citation",
    "FinishArguments",
    "ListArguments",
    "NoteArguments",
    "ReadArguments",
    "RejectionKind",
    "ResearchTool",
    "SearchArguments",
    "ToolContext",
    "ToolRejected",
    "UpdatePlanArguments",
    "parse_arguments",
    "run_source_tool",
    "search_hits",
    "tool_named",
    "verify_note",
]
