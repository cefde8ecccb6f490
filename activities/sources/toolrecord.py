"""The tool call / tool result pair every acquisition records.

The shapes are the context engine's own (``context.tool_history``), so acquisition records
go straight into an assembly's tool history and pair by ``call_id``; the hashes use the
engine's canonical JSON and ``sha256:<hex>`` format so they match what the engine checks.
"""

from __future__ import annotations

from context.items import sha256_text
from context.tokens import canonical_json
from context.tool_history import ToolCall, ToolResult, canonical_argument_hash


def result_hash(content: str) -> str:
    """Hash of a tool result's (or excerpt's) text, as the engine re-computes it."""
    return sha256_text(content)


__all__ = ["ToolCall", "ToolResult", "canonical_argument_hash", "canonical_json", "result_hash"]
