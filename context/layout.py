"""Costing and rendering the admitted working set, with exact token accounting.

Costs are real cl100k counts, computed so that the tokenizer runs over each candidate's
content about once (the count cache makes repeats free):

* **estimate** (for allocation): a data block is ``header + "\\n" + body + "\\n" +
  footer`` (``render.data_block_frame``); its cost is ``count(header) + count(body) +
  count(footer) +`` a boundary allowance of :data:`BOUNDARY_SLACK`, plus per-message
  framing. Counting the content alone (not the block) is what lets thousands of
  candidates share the cache with any other use of the same text.
* **exact** (for the record and the final check): after allocation the admitted messages
  are rendered and each message is counted exactly with the same framing formula as
  ``context.tokens``; the request total is the adapter's count of the serialized payload.
  Only admitted text — bounded by the budget — is ever re-encoded.

Every rendered message is attributed to one partition (via its item ids), so the manifest's
partition usage sums to the exact chat-framed count of what is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from context.items import ContextItem
from context.render import (
    DATA_INSTRUCTION,
    AssemblyInput,
    RenderedMessage,
    data_block_frame,
    escape_content,
    missing_evidence_section,
    tool_result_frame,
)
from context.tokens import REPLY_PRIMING, TokenCounter, canonical_json, message_framing
from context.toolpairs import ToolDefinition, ToolPair
from context.vocabulary import Partition

BOUNDARY_SLACK = 2


@dataclass(frozen=True)
class BlockCost:
    block_tokens: int  # the data block text alone (what evidence_budget counts)
    message_tokens: int  # the whole message including framing
    body_tokens: int


def _framed(counter: TokenCounter, role: str, content_tokens: int) -> int:
    return message_framing() + counter.count_text(role) + content_tokens


def _body(counter: TokenCounter, content: str) -> int:
    return counter.count_text(escape_content(content))


def data_block_cost(counter: TokenCounter, item: ContextItem, flags: Sequence[str]) -> BlockCost:
    """Estimated (upper-bound) cost of ``item`` rendered as a data block in a user message."""
    body = _body(counter, item.content)
    header, footer = data_block_frame(item, flags)
    block = body + counter.count_text(header) + counter.count_text(footer) + BOUNDARY_SLACK
    return BlockCost(block, _framed(counter, "user", block), body)


def trusted_cost(counter: TokenCounter, item: ContextItem) -> int:
    """Cost of a task/state item rendered as ``## TASK <id>\\n<content>`` (upper bound)."""
    head = counter.count_text(f"## STATE {item.item_id}\n")
    return _framed(counter, "user", head + counter.count_text(item.content) + BOUNDARY_SLACK)


def control_item_cost(counter: TokenCounter, item: ContextItem) -> int:
    return counter.count_text(item.content) + BOUNDARY_SLACK


def control_frame_cost(counter: TokenCounter, tools: Sequence[ToolDefinition]) -> int:
    """The system message's framing and data rule, the reply priming and the tool schemas."""
    defs = [t.model_dump(mode="json") for t in tools]
    return (
        REPLY_PRIMING
        + _framed(counter, "system", counter.count_text(DATA_INSTRUCTION) + BOUNDARY_SLACK)
        + counter.tool_definition_tokens(
            [{"type": "function", "function": {**d}} for d in defs]
        )
        + BOUNDARY_SLACK * len(defs)
    )


def missing_notice_cost(
    counter: TokenCounter, topics: Sequence[str], blocking: Sequence[str]
) -> int:
    if not topics:
        return 0
    return _framed(counter, "user", counter.count_text(missing_evidence_section(topics, blocking)))


def pair_cost(
    counter: TokenCounter, pair: ToolPair, flags: Sequence[str], first_of_turn: bool
) -> int:
    """A tool pair: its result message plus its share of the assistant tool-call message."""
    header, footer = tool_result_frame(pair, flags)
    frame = counter.count_text(header) + counter.count_text(footer)
    result_tokens = _body(counter, pair.result.content) + frame
    result_msg = _framed(counter, "tool", result_tokens + BOUNDARY_SLACK)
    result_msg += counter.count_text(pair.call_id)
    call_json = canonical_json(
        [{"id": pair.call_id, "type": "function",
          "function": {"name": pair.tool_name, "arguments": canonical_json(pair.call.arguments)}}]
    )
    call_tokens = counter.count_text(call_json) + BOUNDARY_SLACK
    if first_of_turn:
        call_tokens += _framed(counter, "assistant", 0)
    return result_msg + call_tokens


def message_tokens(counter: TokenCounter, m: RenderedMessage) -> int:
    """Exact chat-framed count of one rendered message (OpenAI-shaped, see context.tokens)."""
    as_dict: dict[str, object] = {"role": m.role, "content": m.content or ""}
    if m.tool_call_id is not None:
        as_dict["tool_call_id"] = m.tool_call_id
    if m.tool_calls:
        as_dict["tool_calls"] = [
            {"id": c.call_id, "type": "function",
             "function": {"name": c.tool_name, "arguments": c.arguments_json}}
            for c in m.tool_calls
        ]
    return counter.message_tokens(as_dict)


def attribute(
    counter: TokenCounter,
    assembly: AssemblyInput,
    partition_of: dict[str, Partition],
) -> tuple[dict[Partition, int], dict[str, int]]:
    """Exact tokens per partition and per item id of a rendered input."""
    per_part = dict.fromkeys(Partition, 0)
    per_item: dict[str, int] = {}
    defs = [
        {"type": "function", "function": t.model_dump(mode="json")}
        for t in assembly.tool_definitions
    ]
    per_part[Partition.CONTROL] += REPLY_PRIMING + counter.tool_definition_tokens(defs)
    for m in assembly.messages:
        n = message_tokens(counter, m)
        if m.role == "system":
            part = Partition.CONTROL
        elif m.role == "assistant":
            part = Partition.RECENT_TOOL_PAIRS
        elif m.item_ids:
            part = partition_of.get(m.item_ids[0], Partition.TASK)
            for iid in m.item_ids:
                per_item[iid] = per_item.get(iid, 0) + n // len(m.item_ids)
        else:
            part = Partition.TASK  # the MISSING EVIDENCE notice
        per_part[part] += n
    return per_part, per_item
