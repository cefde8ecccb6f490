"""Reading a serialized provider request back into its parts.

The extractive provider works on exactly the bytes a remote model would receive, so it
must read both adapter shapes: OpenAI Chat (``messages`` with string contents, ``tool``
messages) and Anthropic Messages (top-level ``system``, content blocks, ``tool_result``
blocks). Data blocks are parsed and hash-checked by ``context.seal.render.parse_data_blocks``;
everything outside data blocks is trusted task/state text rendered by the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from context.seal.render import DataBlockError, DataBlockView, parse_data_blocks
from contracts.errors import ProviderConfigError, ProviderInputError

ADAPTERS = ("openai_chat", "anthropic_messages")


@dataclass
class RequestView:
    """The readable parts of one request, in message order."""

    control: list[str] = field(default_factory=list)
    trusted: list[str] = field(default_factory=list)
    blocks: list[DataBlockView] = field(default_factory=list)


def _texts_of(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                out.append(block["text"])
            elif block.get("type") == "tool_result":
                out += _texts_of(block.get("content"))
    return out


def read_request(payload: dict[str, Any], adapter: str) -> RequestView:
    """Split ``payload`` into control text, trusted user text and verified data blocks."""
    if adapter not in ADAPTERS:
        raise ProviderConfigError(f"unknown adapter {adapter!r}; known: {', '.join(ADAPTERS)}")
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ProviderInputError("request has no messages")
    view = RequestView()
    # a string, or text blocks when the stable prefix carries a cache breakpoint
    view.control += _texts_of(payload.get("system"))
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ProviderInputError(f"message {i} is not an object")
        role = message.get("role")
        if role == "assistant":
            continue  # replayed tool calls: their results carry the data
        for text in _texts_of(message.get("content")):
            if role == "system":
                view.control.append(text)
                continue
            try:
                found = parse_data_blocks(text)
            except DataBlockError as exc:
                raise ProviderInputError(f"message {i}: {exc}") from exc
            if found:
                view.blocks += found
            else:
                view.trusted.append(text)
    return view
