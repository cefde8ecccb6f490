"""``ToolRejected``: a tool call the runtime refuses, as a typed result the model sees.

A model's reply is untrusted input. A call that names an undeclared source, a path outside
the pinned tree, an unknown tool, malformed arguments or arguments over their limits must
never crash the turn nor read anything outside the job's sources; it becomes a tool result
with status ``error`` whose content names the kind of refusal and what was wrong (never the
content of a file), so the model can correct itself next turn and the manifest can count it.
"""

from __future__ import annotations

from typing import Literal

RejectionKind = Literal[
    "unknown_tool",
    "malformed_arguments",
    "arguments_over_limit",
    "undeclared_source",
    "path_outside_source",
    "not_found",
    "source_unavailable",
    "citation_mismatch",
    "too_many_calls",
    # an MCP tool's call (activities/mcp, docs/mcp.md)
    "tool_not_granted",
    "tool_unavailable",
    "tool_timeout",
    "tool_protocol_error",
    "tool_reported_error",
    "tool_output_too_large",
    "tool_list_changed",
    "tool_interrupted",
    "approval_required",
    "approval_refused",
]


class ToolRejected(Exception):
    """The call cannot run as asked; ``kind`` says why in one word, ``detail`` in one line."""

    def __init__(self, kind: RejectionKind, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind: RejectionKind = kind
        self.detail = detail
