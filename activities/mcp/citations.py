"""What a note citing an MCP result may cite, and the evidence it becomes.

Why here: a note's citation is checked against the stored exchange it names
(``activities.research_tools.notes``); an MCP result is shaped like a ``read`` result
(``calls.gated_content``), so a citation of it names the call, the tool's full name as its
source, the result's sha256 as its revision, ``result`` as its path and a line range, and
every cited line must have been in the stored result. Its evidence is untrusted external
data with no authority (SECURITY.md, "11. MCP servers"): a tool result, never a declared source.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from context.vocabulary import SourceType, Trust
from contracts.mcp_servers import split_tool_name


def is_mcp(name: str) -> bool:
    return split_tool_name(name) is not None


def shown_lines(exchange: Mapping[str, Any], source: str, revision: str,
                path: str) -> set[int]:
    """The lines of the stored MCP result a citation of (source, revision, path) may cite."""
    call, result = exchange["call"], exchange["result"]
    if result["status"] != "success" or call["tool_name"] != source:
        return set()
    content = json.loads(result["content"])
    if content.get("path") != path or content.get("revision") != revision:
        return set()
    return set(range(int(content["start_line"]), int(content["end_line"]) + 1))


def evidence_fields(source: str, start: int, end: int) -> dict[str, Any]:
    """The ``EvidenceRecord`` fields of a note's citation of an MCP result."""
    assert split_tool_name(source) is not None
    # cited like a document's lines (``<name>:<path>#La-Lb``), so a draft cites the range
    return {"source_type": SourceType.TOOL_RESULT,
            "locator": f"{source}:result#L{start}-L{end}",
            "trust": Trust.UNTRUSTED_EXTERNAL_DATA, "authority": 0}
