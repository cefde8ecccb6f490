"""The research agent's tools: ``list``, ``search`` and ``read`` over the job's declared
sources at their pinned revisions, and ``note``, a finding whose citations are verified
against the stored results they name (issue 12's tool layer; the loop that offers them to
the model turn by turn is built on top).

``run_source_tool(name, arguments, sources, locations)`` runs one call and returns a
JSON-able result; a call that cannot run as asked — unknown tool, malformed arguments,
arguments over a limit, an undeclared source, a path outside the source — raises
``ToolRejected`` with a ``kind`` and a one-line ``detail``, to be recorded as a typed error
result the model sees next turn. ``TOOL_DEFINITIONS`` are the definitions the provider
adapters serialize.
"""

from activities.research_tools.arguments import (
    MAX_HITS,
    MAX_LIST_ENTRIES,
    MAX_QUERY_CHARS,
    MAX_READ_LINES,
    TOOL_DEFINITIONS,
    Citation,
    FinishArguments,
    ListArguments,
    NoteArguments,
    ReadArguments,
    SearchArguments,
    UpdatePlanArguments,
)
from activities.research_tools.notes import verify_note
from activities.research_tools.rejected import RejectionKind, ToolRejected
from activities.research_tools.source_tools import run_source_tool, search_hits

__all__ = [
    "MAX_HITS",
    "MAX_LIST_ENTRIES",
    "MAX_QUERY_CHARS",
    "MAX_READ_LINES",
    "TOOL_DEFINITIONS",
    "Citation",
    "FinishArguments",
    "ListArguments",
    "NoteArguments",
    "ReadArguments",
    "RejectionKind",
    "SearchArguments",
    "ToolRejected",
    "UpdatePlanArguments",
    "run_source_tool",
    "search_hits",
    "verify_note",
]
