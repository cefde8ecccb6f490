"""The ``note`` tool: a finding is accepted only with citations that check out.

A note is how a research turn turns what the model read into evidence: a topic of the job,
a claim, and one or more citations. Each citation names the call whose stored result the
model saw (``call_id``) and the source, revision, path and line range it cites; it is
verified against that stored exchange — the call must be a successful ``read`` or
``search`` of the same source, the revision and path must be the ones that result
reported, and every cited line must have been in it. A note that cites what no result
showed is refused with ``citation_mismatch`` naming the first citation that failed; a
model cannot make evidence out of text it did not read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from activities.mcp.citations import is_mcp
from activities.mcp.citations import shown_lines as mcp_shown_lines
from activities.research_tools.arguments import Citation, NoteArguments
from activities.research_tools.rejected import ToolRejected
from activities.research_tools.source_tools import search_hits


def _shown_lines(exchange: Mapping[str, Any], citation: Citation) -> set[int]:
    """The lines of ``citation.path`` the stored result showed, at ``citation.revision``."""
    call, result = exchange["call"], exchange["result"]
    if is_mcp(call["tool_name"]):  # an MCP result (docs/mcp.md)
        return mcp_shown_lines(exchange, citation.source, citation.revision, citation.path)
    if result["status"] != "success" or call["tool_name"] not in ("read", "search"):
        return set()
    if call["arguments"].get("source") != citation.source:
        return set()
    content = json.loads(result["content"])
    if call["tool_name"] == "read":
        if content["path"] != citation.path or content["revision"] != citation.revision:
            return set()
        return set(range(content["start_line"], content["end_line"] + 1))
    return {number for path, revision, number, _text in search_hits(content)
            if path == citation.path and revision == citation.revision}


def verify_note(arguments: NoteArguments, topics: Sequence[str],
                exchanges: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The accepted note, or ``ToolRejected`` naming what does not check out.

    ``exchanges`` maps each cited call id to its stored exchange (absent: never stored).
    """
    if arguments.topic not in topics:
        raise ToolRejected("malformed_arguments",
                           f"note.topic {arguments.topic[:200]!r} is not a topic of this job; "
                           f"its topics are {sorted(topics)}")
    for number, citation in enumerate(arguments.citations, start=1):
        where = f"citation {number} ({citation.call_id[:200]!r})"
        if citation.end_line < citation.start_line:
            raise ToolRejected("malformed_arguments",
                               f"{where}: end_line is before start_line")
        exchange = exchanges.get(citation.call_id)
        if exchange is None:
            raise ToolRejected("citation_mismatch", f"{where}: no stored result of that call")
        cited = set(range(citation.start_line, citation.end_line + 1))
        missing = cited - _shown_lines(exchange, citation)
        if missing:
            raise ToolRejected(
                "citation_mismatch",
                f"{where}: {citation.source}@{citation.revision[:12]}:{citation.path} "
                f"line {min(missing)} was not in that call's result")
    # an acknowledgement, not an echo: the call's arguments are resent beside its result
    # every turn it stays verbatim, and ``record_turn`` reads the citations from the call
    return {"accepted": True, "topic": arguments.topic, "citations": len(arguments.citations)}
