"""Anthropic Messages serialization and its post-serialization validation.

Why this exists: the Messages API differs from Chat Completions in exactly the places where
context assembly can break: ``system`` is a top-level field, messages must alternate
``user``/``assistant`` starting with ``user``, an ``assistant`` message's ``tool_use``
blocks must be answered by ``tool_result`` blocks in the *next* ``user`` message, and those
result blocks must come first in it.

Mapping from :class:`~context.seal.render.AssemblyInput`: all ``system`` messages → top-level
``system`` (joined by a blank line, omitted when empty); ``user`` → ``user`` with a
``text`` block; ``assistant`` → ``assistant`` with an optional ``text`` block then
``tool_use`` blocks (``input`` = the parsed arguments); ``tool`` → ``user`` with a
``tool_result`` block (``is_error: true`` for status ``error``). Adjacent same-role
messages are merged by concatenating their blocks in order. ``max_tokens`` carries the
response reserve; tool definitions → ``tools`` with ``input_schema``.

Rules checked by :func:`validate`: ``payload_shape``, ``system_top_level``,
``role_known``, ``first_message_user``, ``roles_alternate``, ``content_blocks``,
``nonempty_text``, ``tool_use_id_format`` (``^[a-zA-Z0-9_-]+$``, documented length limit
64), ``tool_name_format`` (``^[a-zA-Z0-9_-]{1,64}$``), ``duplicate_tool_use_id``,
``tool_result_in_next_message``, ``tool_results_first``, ``orphan_tool_result``,
``duplicate_tool_result``, ``last_message_user``, ``tool_definition_shape``,
``duplicate_tool_name``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from context.seal.adapters.base import SerializationError, SerializedRequest, check_ids_unique
from context.seal.adapters.base import finish as _finish
from context.seal.adapters.base import map_call_id as _map_call_id
from context.seal.render import AssemblyInput
from context.tokens import TokenCounter, default_counter

__all__ = ["ADAPTER", "AnthropicMessagesAdapter", "count_tokens", "serialize", "validate"]

ID_PATTERN = re.compile(r"[a-zA-Z0-9_-]+")
ID_MAX = 64
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_BLOCK_TYPES = {"text", "tool_use", "tool_result"}


class AnthropicMessagesAdapter:
    name = "anthropic_messages"
    version = "1.0.0"
    serialization_policy_version = "anthropic-messages-serialization/v1"

    def serialize(
        self, assembly: AssemblyInput, model_name: str, max_tokens: int
    ) -> SerializedRequest:
        id_map: dict[str, str] = {}

        def sent_id(call_id: str) -> str:
            return id_map.setdefault(call_id, _map_call_id(call_id, ID_PATTERN, ID_MAX))

        system: list[str] = []
        messages: list[dict[str, Any]] = []
        for m in assembly.messages:
            if m.role == "system":
                system.append(m.content or "")
                continue
            blocks: list[dict[str, Any]] = []
            role = "assistant" if m.role == "assistant" else "user"
            if m.role == "tool":
                assert m.tool_call_id is not None  # guaranteed by RenderedMessage
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": sent_id(m.tool_call_id),
                    "content": m.content or "",
                }
                if m.is_error:
                    block["is_error"] = True
                blocks.append(block)
            else:
                if m.content:
                    blocks.append({"type": "text", "text": m.content})
                blocks += [
                    {
                        "type": "tool_use",
                        "id": sent_id(c.call_id),
                        "name": c.tool_name,
                        "input": json.loads(c.arguments_json),
                    }
                    for c in m.tool_calls
                ]
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": role, "content": blocks})
        check_ids_unique(self.name, id_map, "duplicate_tool_use_id")
        payload: dict[str, Any] = {"model": model_name, "max_tokens": max_tokens}
        joined = "\n\n".join(s for s in system if s)
        if joined:
            payload["system"] = joined
        payload["messages"] = messages
        if assembly.tool_definitions:
            payload["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in assembly.tool_definitions
            ]
        return _finish(self, payload, id_map)

    def validate(self, payload: dict[str, Any]) -> None:
        _Validator(self.name, payload).run()

    def count_tokens(self, payload: dict[str, Any], counter: TokenCounter | None = None) -> int:
        """cl100k estimate of the request: ``system`` counted as a leading message."""
        counter = default_counter() if counter is None else counter
        head = [{"role": "system", "content": payload["system"]}] if "system" in payload else []
        return counter.count_messages([*head, *payload["messages"]], payload.get("tools"))


class _Validator:
    def __init__(self, adapter: str, payload: dict[str, Any]) -> None:
        self.adapter = adapter
        self.payload = payload
        self.seen_uses: set[str] = set()

    def fail(self, rule: str, detail: str) -> SerializationError:
        return SerializationError(self.adapter, rule, detail)

    def run(self) -> None:
        p = self.payload
        if not isinstance(p.get("model"), str) or not p["model"]:
            raise self.fail("payload_shape", "model must be a non-empty string")
        mt = p.get("max_tokens")
        if not isinstance(mt, int) or isinstance(mt, bool) or mt < 1:
            raise self.fail("payload_shape", f"max_tokens must be >= 1, got {mt!r}")
        if "system" in p and not isinstance(p["system"], str):
            raise self.fail("system_top_level", "system must be a string")
        messages = p.get("messages")
        if not isinstance(messages, list) or not messages:
            raise self.fail("payload_shape", "messages must be a non-empty list")
        self.tools(p.get("tools"))
        open_uses: set[str] = set()
        for i, m in enumerate(messages):
            role = m.get("role") if isinstance(m, dict) else None
            if role == "system":
                raise self.fail("system_top_level", f"messages[{i}] has role system")
            if role not in ("user", "assistant"):
                raise self.fail("role_known", f"messages[{i}] role {role!r}")
            if i == 0 and role != "user":
                raise self.fail("first_message_user", "the first message must be user")
            if i > 0 and messages[i - 1].get("role") == role:
                raise self.fail("roles_alternate", f"messages[{i - 1}] and [{i}] are both {role}")
            blocks = m.get("content")
            if not isinstance(blocks, list) or not blocks:
                raise self.fail("content_blocks", f"messages[{i}] needs a non-empty block list")
            if role == "user":
                self.user_blocks(i, blocks, open_uses)
                open_uses = set()
            else:
                if open_uses:
                    raise self.fail(
                        "tool_result_in_next_message", f"tool_use {sorted(open_uses)} unanswered"
                    )
                open_uses = self.assistant_blocks(i, blocks)
        if open_uses:
            raise self.fail(
                "tool_result_in_next_message", f"tool_use {sorted(open_uses)} unanswered"
            )
        if messages[-1].get("role") != "user":
            raise self.fail("last_message_user", "the last message must be user")

    def tools(self, tools: Any) -> None:
        if tools is None:
            return
        if not isinstance(tools, list):
            raise self.fail("tool_definition_shape", "tools must be a list")
        names: set[str] = set()
        for i, t in enumerate(tools):
            if not isinstance(t, dict) or not isinstance(t.get("input_schema"), dict):
                raise self.fail("tool_definition_shape", f"tools[{i}] needs an input_schema")
            name = t.get("name")
            if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
                raise self.fail("tool_name_format", f"tools[{i}] name {name!r}")
            if name in names:
                raise self.fail("duplicate_tool_name", f"tool {name!r} defined twice")
            names.add(name)

    def block_type(self, i: int, j: int, block: Any) -> str:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in _BLOCK_TYPES:
            raise self.fail("content_blocks", f"messages[{i}].content[{j}] type {kind!r}")
        if kind == "text" and not (isinstance(block.get("text"), str) and block["text"]):
            raise self.fail("nonempty_text", f"messages[{i}].content[{j}] has empty text")
        return str(kind)

    def user_blocks(self, i: int, blocks: list[Any], open_uses: set[str]) -> None:
        answered: set[str] = set()
        seen_text = False
        for j, b in enumerate(blocks):
            kind = self.block_type(i, j, b)
            if kind == "tool_use":
                raise self.fail("content_blocks", f"messages[{i}] (user) holds a tool_use")
            if kind == "text":
                seen_text = True
                continue
            if seen_text:
                raise self.fail("tool_results_first", f"messages[{i}].content[{j}] after text")
            uid = b.get("tool_use_id")
            if uid in answered:
                raise self.fail("duplicate_tool_result", f"messages[{i}] answers {uid!r} twice")
            if uid not in open_uses:
                raise self.fail(
                    "orphan_tool_result",
                    f"messages[{i}] answers {uid!r}, not a tool_use of the previous message",
                )
            if not isinstance(b.get("content"), str):
                raise self.fail("content_blocks", f"messages[{i}].content[{j}] content not text")
            answered.add(uid)
        missing = open_uses - answered
        if missing:
            raise self.fail(
                "tool_result_in_next_message", f"messages[{i}] lacks results for {sorted(missing)}"
            )

    def assistant_blocks(self, i: int, blocks: list[Any]) -> set[str]:
        uses: set[str] = set()
        for j, b in enumerate(blocks):
            kind = self.block_type(i, j, b)
            if kind == "tool_result":
                raise self.fail("content_blocks", f"messages[{i}] (assistant) holds a tool_result")
            if kind != "tool_use":
                continue
            uid = b.get("id")
            if not isinstance(uid, str) or len(uid) > ID_MAX or not ID_PATTERN.fullmatch(uid):
                raise self.fail("tool_use_id_format", f"messages[{i}].content[{j}] id {uid!r}")
            if uid in self.seen_uses:
                raise self.fail("duplicate_tool_use_id", f"tool_use id {uid!r} reused")
            name = b.get("name")
            if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
                raise self.fail("tool_name_format", f"messages[{i}].content[{j}] name {name!r}")
            if not isinstance(b.get("input"), dict):
                raise self.fail("content_blocks", f"messages[{i}].content[{j}] input not object")
            self.seen_uses.add(uid)
            uses.add(uid)
        return uses


ADAPTER = AnthropicMessagesAdapter()
serialize = ADAPTER.serialize
validate = ADAPTER.validate
count_tokens = ADAPTER.count_tokens
