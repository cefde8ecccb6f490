"""The research agent's tools: ``list``, ``search`` and ``read`` over the job's declared
sources at their pinned revisions, ``note`` (a finding whose citations are verified against
the stored results they name), ``update_plan`` and ``finish``. ``activities.tool_call``
runs one call as an activity; the research loop (docs/architecture.md#the-research-loop)
offers them to the model turn by turn.

``run_source_tool(name, arguments, sources, locations, read_limits=…)`` runs one source
call and returns a JSON-able result (``search_hits`` reads a search result's hits back); a
call that cannot run as asked — unknown tool, malformed arguments, arguments over a limit,
an undeclared source, a path outside the source — raises ``ToolRejected`` with a ``kind``
and a one-line ``detail``, to be recorded as a typed error result the model sees next turn.
``TOOL_DEFINITIONS`` are the definitions the provider adapters serialize.
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
from activities.research_tools.budget import MAX_CALL_BYTES, MAX_REGEX_SECONDS, CallBudget
from activities.research_tools.notes import verify_note
from activities.research_tools.rejected import RejectionKind, ToolRejected
from activities.research_tools.source_tools import run_source_tool, search_hits

__all__ = [
    "MAX_CALL_BYTES",
    "MAX_HITS",
    "MAX_LIST_ENTRIES",
    "MAX_QUERY_CHARS",
    "MAX_READ_LINES",
    "MAX_REGEX_SECONDS",
    "TOOL_DEFINITIONS",
    "CallBudget",
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
