"""The ``note`` tool: a finding is accepted only with citations that check out.

A note is how a research turn turns what the model read into evidence: a topic of the job,
a claim, and one or more citations. Each citation names the call whose stored result the
model saw (``call_id``) and the source, revision, path and line range it cites; it is
verified against that stored exchange through the tool that produced it
(``ResearchTool.citable_lines``: a ``read`` or ``search`` of the same source, an MCP
tool's result …) — the revision and path must be the ones that result reported, and every
cited line must have been in it. A note that cites what no result showed is refused with
``citation_mismatch`` naming the first citation that failed; a model cannot make evidence
out of text it did not read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import Field

from activities.research_tools.arguments import Arguments
from activities.research_tools.exchanges import exchange_id, stored_exchange
from activities.research_tools.tool import ArgumentTool, ResearchTool, ToolContext
from activities.tool_errors import ToolRejected

#: a note's claim is at most this long
MAX_CLAIM_CHARS = 1000
#: and cites at most this many ranges
MAX_CITATIONS = 10


class Citation(Arguments):
    """Lines a stored tool result showed: which call, source, revision, path and range."""

    call_id: str = Field(min_length=1, max_length=200)
    source: str = Field(min_length=1, max_length=64)
    revision: str = Field(min_length=1, max_length=100)
    path: str = Field(min_length=1, max_length=1000)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)


class NoteArguments(Arguments):
    """Record a finding for one of the job's topics: a claim and the lines that support it.
    Every citation must name a read or search call whose result showed those lines."""

    topic: str = Field(min_length=1, max_length=200)
    claim: str = Field(min_length=1, max_length=MAX_CLAIM_CHARS)
    citations: list[Citation] = Field(min_length=1, max_length=MAX_CITATIONS)


def cited_lines(exchange: Mapping[str, Any], source: str, revision: str, path: str,
                lookup: Callable[[str], ResearchTool]) -> dict[int, str]:
    """The lines of ``path`` at ``revision`` in ``source`` that the stored exchange's
    result showed, as the tool that produced it says (none for a failed call or a tool
    that is not registered)."""
    call, result = exchange["call"], exchange["result"]
    if result["status"] != "success":
        return {}
    try:
        tool = lookup(call["tool_name"])
    except ToolRejected:
        return {}
    return tool.citable_lines(call["arguments"], json.loads(result["content"]), source,
                              revision, path)


def verify_note(arguments: NoteArguments, topics: Sequence[str],
                exchanges: Mapping[str, Mapping[str, Any]],
                lookup: Callable[[str], ResearchTool]) -> dict[str, Any]:
    """The accepted note, or ``ToolRejected`` naming what does not check out.

    ``exchanges`` maps each cited call id to its stored exchange (absent: never stored);
    ``lookup`` is the tool registry's ``tool_named``.
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
        missing = cited - set(cited_lines(exchange, citation.source, citation.revision,
                                          citation.path, lookup))
        if missing:
            raise ToolRejected(
                "citation_mismatch",
                f"{where}: {citation.source}@{citation.revision[:12]}:{citation.path} "
                f"line {min(missing)} was not in that call's result")
    # an acknowledgement, not an echo: the call's arguments are resent beside its result
    # every turn it stays verbatim, and ``record_turn`` reads the citations from the call
    return {"accepted": True, "topic": arguments.topic, "citations": len(arguments.citations)}


class NoteTool(ArgumentTool):
    name = "note"
    arguments = NoteArguments

    async def run(self, ctx: ToolContext, arguments: Any) -> dict[str, Any]:
        exchanges: dict[str, Any] = {}
        for call_id in sorted({citation.call_id for citation in arguments.citations}):
            found = await stored_exchange(ctx.store, exchange_id(ctx.spec.job_id, call_id),
                                          ctx.principal)
            if found is not None:
                exchanges[call_id] = found[1]
        return verify_note(arguments, [topic.name for topic in ctx.spec.topics], exchanges,
                           ctx.lookup)
