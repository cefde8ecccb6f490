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

Prompt caching (docs/context-engine.md#prompt-cache-identity): the API reads a request as
tools, then system, then messages, and caches the prefix up to a block marked
``cache_control: {"type": "ephemeral"}``. When the engine asks for it (``CacheRequest``) the
stable prefix ends with one — on the system text, which then becomes one ``text`` block
(a plain string cannot carry it), or on the last tool when there is no system text — and
the last block of each boundary message gets one; at most :data:`MAX_BREAKPOINTS` (the
API's limit), the latest boundaries kept. Without a ``CacheRequest`` the payload is what it
always was.

Rules checked by :func:`validate`: ``payload_shape``, ``system_top_level``,
``role_known``, ``first_message_user``, ``roles_alternate``, ``content_blocks``,
``nonempty_text``, ``tool_use_id_format`` (``^[a-zA-Z0-9_-]+$``, documented length limit
64), ``tool_name_format`` (``^[a-zA-Z0-9_-]{1,64}$``), ``duplicate_tool_use_id``,
``tool_result_in_next_message``, ``tool_results_first``, ``orphan_tool_result``,
``duplicate_tool_result``, ``last_message_user``, ``tool_definition_shape``,
``duplicate_tool_name``, ``cache_control`` (exactly ``{"type": "ephemeral"}``, optionally
with ``ttl`` ``5m``/``1h``) and ``cache_breakpoints`` (at most four).
"""

from __future__ import annotations

import json
import re
from typing import Any

from context.seal.adapters.base import (
    CacheRequest,
    SerializationError,
    SerializedRequest,
    check_ids_unique,
)
from context.seal.adapters.base import finish as _finish
from context.seal.adapters.base import map_call_id as _map_call_id
from context.seal.render import AssemblyInput
from context.tokens import TokenCounter, default_counter

__all__ = ["ADAPTER", "AnthropicMessagesAdapter", "count_tokens", "serialize", "validate"]

ID_PATTERN = re.compile(r"[a-zA-Z0-9_-]+")
ID_MAX = 64
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_BLOCK_TYPES = {"text", "tool_use", "tool_result"}
#: the Messages API accepts at most four ``cache_control`` breakpoints per request
MAX_BREAKPOINTS = 4
_TTLS = ("5m", "1h")


def _breakpoint() -> dict[str, str]:
    return {"type": "ephemeral"}


class AnthropicMessagesAdapter:
    name = "anthropic_messages"
    version = "1.1.0"
    serialization_policy_version = "anthropic-messages-serialization/v1"

    def serialize(
        self, assembly: AssemblyInput, model_name: str, max_tokens: int,
        cache: CacheRequest | None = None,
    ) -> SerializedRequest:
        id_map: dict[str, str] = {}
        # rendered message index -> (payload message index, block index) of its last block
        last_block: dict[int, tuple[int, int]] = {}

        def sent_id(call_id: str) -> str:
            return id_map.setdefault(call_id, _map_call_id(call_id, ID_PATTERN, ID_MAX))

        system: list[str] = []
        messages: list[dict[str, Any]] = []
        for index, m in enumerate(assembly.messages):
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
            if blocks:
                last_block[index] = (len(messages) - 1, len(messages[-1]["content"]) - 1)
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
        if cache is not None:
            _mark_breakpoints(payload, cache, last_block)
        return _finish(self, payload, id_map)

    def cacheable_prefix_tokens(
        self, payload: dict[str, Any], counter: TokenCounter | None = None
    ) -> int:
        """Tokens of the request up to and including its last ``cache_control`` block, in
        the API's order (tools, system, messages): what a cache hit can reuse. 0 without
        a breakpoint."""
        counter = default_counter() if counter is None else counter
        tools = list(payload.get("tools") or [])
        system = payload.get("system")
        head = [{"role": "system", "content": system}] if system else []
        messages = payload.get("messages") or []
        for i in range(len(messages) - 1, -1, -1):
            blocks = messages[i].get("content") or []
            for j in range(len(blocks) - 1, -1, -1):
                if "cache_control" in blocks[j]:
                    cut = {"role": messages[i]["role"], "content": blocks[:j + 1]}
                    return counter.count_messages([*head, *messages[:i], cut], tools)
        if isinstance(system, list) and any("cache_control" in b for b in system):
            return counter.count_messages(head, tools)
        for k in range(len(tools) - 1, -1, -1):
            if "cache_control" in tools[k]:
                return counter.tool_definition_tokens(tools[:k + 1])
        return 0

    def validate(self, payload: dict[str, Any]) -> None:
        _Validator(self.name, payload).run()

    def count_tokens(self, payload: dict[str, Any], counter: TokenCounter | None = None) -> int:
        """cl100k estimate of the request: ``system`` counted as a leading message."""
        counter = default_counter() if counter is None else counter
        head = [{"role": "system", "content": payload["system"]}] if "system" in payload else []
        return counter.count_messages([*head, *payload["messages"]], payload.get("tools"))


def _mark_breakpoints(payload: dict[str, Any], cache: CacheRequest,
                      last_block: dict[int, tuple[int, int]]) -> None:
    """Put the requested ``cache_control`` breakpoints into ``payload``, in place."""
    budget = MAX_BREAKPOINTS
    if cache.stable_prefix:
        if "system" in payload:
            payload["system"] = [{"type": "text", "text": payload["system"],
                                  "cache_control": _breakpoint()}]
            budget -= 1
        elif payload.get("tools"):
            payload["tools"][-1]["cache_control"] = _breakpoint()
            budget -= 1
    places = sorted({last_block[i] for i in cache.boundaries if i in last_block})
    for m, b in places[max(0, len(places) - budget):]:
        payload["messages"][m]["content"][b]["cache_control"] = _breakpoint()


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
        self.system(p.get("system"), "system" in p)
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
        self.breakpoints(p)

    def system(self, system: Any, present: bool) -> None:
        """A string, or a non-empty list of non-empty ``text`` blocks (which may carry a
        cache breakpoint)."""
        if not present or isinstance(system, str):
            return
        if not isinstance(system, list) or not system:
            raise self.fail("system_top_level", "system must be a string or text blocks")
        for j, block in enumerate(system):
            if not isinstance(block, dict) or block.get("type") != "text":
                raise self.fail("system_top_level", f"system[{j}] is not a text block")
            if not (isinstance(block.get("text"), str) and block["text"]):
                raise self.fail("nonempty_text", f"system[{j}] has empty text")

    def breakpoints(self, p: dict[str, Any]) -> None:
        """Every ``cache_control`` is an ephemeral breakpoint; at most four in all."""
        marked: list[tuple[str, Any]] = []
        for i, t in enumerate(p.get("tools") or []):
            marked.append((f"tools[{i}]", t))
        if isinstance(p.get("system"), list):
            marked += [(f"system[{j}]", b) for j, b in enumerate(p["system"])]
        for i, m in enumerate(p["messages"]):
            marked += [(f"messages[{i}].content[{j}]", b) for j, b in enumerate(m["content"])]
        found = 0
        for where, block in marked:
            if "cache_control" not in block:
                continue
            control = block["cache_control"]
            if (not isinstance(control, dict) or control.get("type") != "ephemeral"
                    or not set(control) <= {"type", "ttl"}
                    or control.get("ttl", "5m") not in _TTLS):
                raise self.fail("cache_control", f"{where} cache_control {control!r} is not "
                                "an ephemeral breakpoint")
            found += 1
        if found > MAX_BREAKPOINTS:
            raise self.fail("cache_breakpoints", f"{found} cache_control breakpoints, at most "
                            f"{MAX_BREAKPOINTS} allowed")

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
