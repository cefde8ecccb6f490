"""Costing and rendering the admitted working set, with exact token accounting.

Costs are real cl100k counts of the very strings that will be sent, so the tokenizer runs
over each costed candidate once and the final count of the serialized request is served
from the count cache (data items the budget can prove do not fit are never tokenized:
``context.limits.floors``, ``context.budget.allocation``):

* a data item costs ``count(data_block(item, flags))`` plus chat framing — the exact
  block the renderer will emit (the same string, so the final count is a cache hit);
* a task or state item costs the exact ``## TASK <id>`` / ``## STATE <id>`` message;
* a tool pair costs its exact result block plus its share of the assistant message
  that carries the calls (an estimate with a small allowance: calls of one turn share
  one message);
* control items share the one system message; each costs its text plus a join
  allowance, the message frame and data rule are one fixed unit.

After allocation the admitted messages are rendered and counted exactly with the
framing formula of ``context.tokens``; the request total is the adapter's count of the
serialized payload. Every rendered message is attributed to one partition (via its
item ids), so the manifest's partition usage sums to the exact chat-framed count of
what is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from context.items import ContextItem
from context.seal.render import (
    DATA_INSTRUCTION,
    AssemblyInput,
    RenderedMessage,
    missing_evidence_section,
    tool_result_block,
)
from context.tokens import REPLY_PRIMING, TokenCounter, canonical_json, message_framing
from context.tool_history import ToolDefinition, ToolPair
from context.vocabulary import Partition, Zone

BOUNDARY_SLACK = 2


@dataclass(frozen=True)
class BlockCost:
    block_tokens: int  # the data block text alone (what evidence_budget counts)
    message_tokens: int  # the whole message including framing
    body_tokens: int


def _framed(counter: TokenCounter, role: str, content_tokens: int) -> int:
    return message_framing() + counter.count_text(role) + content_tokens


def block_cost(counter: TokenCounter, block_tokens: int) -> BlockCost:
    """The cost of a data block already counted (``block_tokens``) as a user message."""
    return BlockCost(block_tokens, _framed(counter, "user", block_tokens), 0)


def trusted_cost(counter: TokenCounter, item: ContextItem, zone: Zone) -> int:
    """Exact cost of a task/state item rendered as ``## TASK <id>`` + newline + content."""
    label = "TASK" if zone is Zone.TASK else "STATE"
    text = f"## {label} {item.item_id}\n{item.content}"
    return _framed(counter, "user", counter.count_text(text))


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
    result_msg = _framed(counter, "tool", counter.count_text(tool_result_block(pair, flags)))
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
