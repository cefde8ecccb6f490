"""Reading a serialized provider request back into its parts.

The extractive provider works on exactly the bytes a remote model would receive, so it
must read both adapter shapes: OpenAI Chat (``messages`` with string contents, ``tool``
messages) and Anthropic Messages (top-level ``system``, content blocks, ``tool_result``
blocks). Data blocks are parsed and hash-checked by ``context.seal.render.parse_data_blocks``;
everything outside data blocks is trusted task/state text rendered by the engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from context import ADAPTER_NAMES, DataBlockError, DataBlockView, parse_data_blocks
from contracts.errors import ProviderConfigError, ProviderInputError

ADAPTERS = ADAPTER_NAMES


@dataclass
class RequestView:
    """The readable parts of one request, in message order."""

    control: list[str] = field(default_factory=list)
    trusted: list[str] = field(default_factory=list)
    blocks: list[DataBlockView] = field(default_factory=list)
    #: the tool calls the request replays, by call id: (tool name, arguments) — a tool
    #: result's data block names only its call (``context.limits.blocks``)
    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    #: the tools the request offers, by name: (description, parameters schema)
    tools: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)


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


def _calls_of(message: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """An assistant message's tool calls, either adapter's shape: OpenAI's ``tool_calls``
    (arguments as a JSON string) or Anthropic's ``tool_use`` content blocks."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {} if isinstance(call, dict) else {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        if isinstance(call, dict) and isinstance(call.get("id"), str):
            found[call["id"]] = (str(function.get("name", "")),
                                 arguments if isinstance(arguments, dict) else {})
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use" \
                and isinstance(block.get("id"), str):
            arguments = block.get("input")
            found[block["id"]] = (str(block.get("name", "")),
                                  arguments if isinstance(arguments, dict) else {})
    return found


def read_request(payload: dict[str, Any], adapter: str) -> RequestView:
    """Split ``payload`` into control text, trusted user text and verified data blocks."""
    if adapter not in ADAPTERS:
        raise ProviderConfigError(f"unknown adapter {adapter!r}; known: {', '.join(ADAPTERS)}")
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ProviderInputError("request has no messages")
    view = RequestView()
    for tool in payload.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        spec: dict[str, Any] = function if isinstance(function, dict) else tool
        schema = spec.get("parameters", spec.get("input_schema"))
        if isinstance(spec.get("name"), str) and isinstance(schema, dict):
            view.tools[spec["name"]] = (str(spec.get("description", "")), schema)
    # a string, or text blocks when the stable prefix carries a cache breakpoint
    view.control += _texts_of(payload.get("system"))
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ProviderInputError(f"message {i} is not an object")
        role = message.get("role")
        if role == "assistant":  # replayed tool calls: their results carry the data
            view.calls.update(_calls_of(message))
            continue
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
        for answered, block_id in _answers(message):
            # the adapter may have mapped a call id the provider cannot take: the result's
            # block still names the call as issued
            if answered in view.calls:
                view.calls.setdefault(block_id, view.calls[answered])
    return view


def _answers(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(call id as sent, call id as issued) of each tool result ``message`` carries."""
    pairs: list[tuple[str, str]] = []
    parts: list[tuple[Any, Any]] = []
    if message.get("role") == "tool":
        parts.append((message.get("tool_call_id"), message.get("content")))
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            parts.append((block.get("tool_use_id"), block.get("content")))
    for sent, body in parts:
        for text in _texts_of(body) if isinstance(sent, str) else []:
            try:
                found = parse_data_blocks(text)
            except DataBlockError:
                continue
            pairs += [(sent, b.item_id.removeprefix("tool-result:")) for b in found]
    return pairs
