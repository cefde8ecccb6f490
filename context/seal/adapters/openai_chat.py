"""OpenAI Chat Completions serialization and its post-serialization validation.

Why this exists: the Chat Completions API has its own shape for roles and tool exchanges
(an ``assistant`` message with ``tool_calls`` must be answered by one ``tool`` message per
call id before any other message), and the manifest must hash what is really sent.

Mapping from :class:`~context.seal.render.AssemblyInput`: ``system`` → one ``system`` message
(first); ``user`` → ``user`` (string content; one message per data item is kept as is —
the API accepts consecutive user messages); ``assistant`` → ``assistant`` with
``tool_calls`` (``type: function``, arguments as canonical JSON strings; no ``content``
key when there is no text); ``tool`` → ``tool`` with ``tool_call_id``. Tool definitions
→ ``tools`` (``type: function``). ``max_completion_tokens`` carries the response reserve
(the current name of the parameter; ``max_tokens`` is deprecated for newer models).

Prompt caching (docs/context-engine.md#prompt-cache-identity): OpenAI caches the longest
previously seen prefix on its own (tools, then messages); a ``CacheRequest.key`` becomes
``prompt_cache_key``, which routes a job's requests to the same cache. There are no
breakpoints to place; the cacheable prefix the engine counts is the stable one, the tool
definitions and the system message.

Rules checked by :func:`validate` (each is the ``rule`` of a :class:`SerializationError`):
``payload_shape``, ``role_known``, ``system_only_first``, ``content_string``,
``tool_call_shape``, ``tool_call_id_format`` (documented limit: ``^[A-Za-z0-9_-]{1,40}$``;
OpenAI rejects ids longer than 40 characters), ``tool_name_format``
(``^[a-zA-Z0-9_-]{1,64}$``), ``duplicate_tool_call_id``, ``tool_results_follow_call``
(every call answered immediately, exactly once, before any other message),
``orphan_tool_result``, ``last_message_role`` (user or tool, so the model answers),
``tool_definition_shape``, ``duplicate_tool_name``, ``prompt_cache_key`` (a string of
1 to 64 characters from ``[A-Za-z0-9_.:-]``).
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

__all__ = ["ADAPTER", "OpenAIChatAdapter", "count_tokens", "serialize", "validate"]

ID_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
ID_MAX = 40
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
CACHE_KEY_PATTERN = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


class OpenAIChatAdapter:
    name = "openai_chat"
    version = "1.1.0"
    serialization_policy_version = "openai-chat-serialization/v1"

    def serialize(
        self, assembly: AssemblyInput, model_name: str, max_tokens: int,
        cache: CacheRequest | None = None,
    ) -> SerializedRequest:
        id_map: dict[str, str] = {}

        def sent_id(call_id: str) -> str:
            return id_map.setdefault(call_id, _map_call_id(call_id, ID_PATTERN, ID_MAX))

        messages: list[dict[str, Any]] = []
        for m in assembly.messages:
            if m.role == "assistant":
                msg: dict[str, Any] = {"role": "assistant"}
                if m.content:
                    msg["content"] = m.content
                msg["tool_calls"] = [
                    {
                        "id": sent_id(c.call_id),
                        "type": "function",
                        "function": {"name": c.tool_name, "arguments": c.arguments_json},
                    }
                    for c in m.tool_calls
                ]
                if not msg["tool_calls"]:
                    del msg["tool_calls"]
                messages.append(msg)
            elif m.role == "tool":
                assert m.tool_call_id is not None  # guaranteed by RenderedMessage
                messages.append(
                    {"role": "tool", "tool_call_id": sent_id(m.tool_call_id), "content": m.content}
                )
            else:
                messages.append({"role": m.role, "content": m.content or ""})
        check_ids_unique(self.name, id_map)
        payload: dict[str, Any] = {
            "model": model_name,
            "max_completion_tokens": max_tokens,
            "messages": messages,
        }
        if assembly.tool_definitions:
            payload["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in assembly.tool_definitions
            ]
        if cache is not None and cache.key is not None:
            payload["prompt_cache_key"] = cache.key
        return _finish(self, payload, id_map)

    def validate(self, payload: dict[str, Any]) -> None:
        _Validator(self.name, payload).run()

    def count_tokens(self, payload: dict[str, Any], counter: TokenCounter | None = None) -> int:
        counter = default_counter() if counter is None else counter
        return counter.count_messages(payload["messages"], payload.get("tools"))

    def cacheable_prefix_tokens(
        self, payload: dict[str, Any], counter: TokenCounter | None = None
    ) -> int:
        """Tokens of the stable prefix: the tool definitions and the leading system message."""
        counter = default_counter() if counter is None else counter
        head = [m for m in payload["messages"][:1] if m.get("role") == "system"]
        tools = payload.get("tools")
        if not head and not tools:
            return 0
        return counter.count_messages(head, tools)


class _Validator:
    def __init__(self, adapter: str, payload: dict[str, Any]) -> None:
        self.adapter = adapter
        self.payload = payload

    def fail(self, rule: str, detail: str) -> SerializationError:
        return SerializationError(self.adapter, rule, detail)

    def run(self) -> None:
        p = self.payload
        if not isinstance(p.get("model"), str) or not p["model"]:
            raise self.fail("payload_shape", "model must be a non-empty string")
        mct = p.get("max_completion_tokens")
        if not isinstance(mct, int) or isinstance(mct, bool) or mct < 1:
            raise self.fail("payload_shape", f"max_completion_tokens must be >= 1, got {mct!r}")
        messages = p.get("messages")
        if not isinstance(messages, list) or not messages:
            raise self.fail("payload_shape", "messages must be a non-empty list")
        self.tools(p.get("tools"))
        self.messages(messages)
        key = p.get("prompt_cache_key")
        if "prompt_cache_key" in p and not (
                isinstance(key, str) and CACHE_KEY_PATTERN.fullmatch(key)):
            raise self.fail("prompt_cache_key", f"prompt_cache_key {key!r} is not 1-64 "
                            "characters of [A-Za-z0-9_.:-]")

    def tools(self, tools: Any) -> None:
        if tools is None:
            return
        if not isinstance(tools, list):
            raise self.fail("tool_definition_shape", "tools must be a list")
        names: set[str] = set()
        for i, t in enumerate(tools):
            fn = t.get("function") if isinstance(t, dict) else None
            if not isinstance(fn, dict) or t.get("type") != "function":
                raise self.fail("tool_definition_shape", f"tools[{i}] is not a function tool")
            name = fn.get("name")
            if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
                raise self.fail("tool_name_format", f"tools[{i}] name {name!r}")
            if not isinstance(fn.get("parameters", {}), dict):
                raise self.fail("tool_definition_shape", f"tools[{i}] parameters not an object")
            if name in names:
                raise self.fail("duplicate_tool_name", f"tool {name!r} defined twice")
            names.add(name)

    def messages(self, messages: list[Any]) -> None:
        seen_ids: set[str] = set()
        pending: set[str] = set()
        for i, m in enumerate(messages):
            role = m.get("role") if isinstance(m, dict) else None
            if role not in ("system", "user", "assistant", "tool"):
                raise self.fail("role_known", f"messages[{i}] role {role!r}")
            if pending and role != "tool":
                raise self.fail(
                    "tool_results_follow_call",
                    f"messages[{i}] ({role}) comes before results for {sorted(pending)}",
                )
            if role == "system" and i != 0:
                raise self.fail("system_only_first", f"messages[{i}] is a system message")
            if role in ("system", "user", "tool") and not isinstance(m.get("content"), str):
                raise self.fail("content_string", f"messages[{i}] content must be a string")
            if role == "assistant":
                if not m.get("tool_calls") and not isinstance(m.get("content"), str):
                    raise self.fail("content_string", f"messages[{i}] has no content or calls")
                pending = self.tool_calls(i, m.get("tool_calls") or [], seen_ids)
            elif role == "tool":
                cid = m.get("tool_call_id")
                if cid not in pending:
                    raise self.fail(
                        "orphan_tool_result",
                        f"messages[{i}] answers {cid!r}, which is not an open call "
                        "of the preceding assistant message",
                    )
                pending.discard(cid)
        if pending:
            raise self.fail("tool_results_follow_call", f"calls {sorted(pending)} unanswered")
        if messages[-1].get("role") not in ("user", "tool"):
            raise self.fail("last_message_role", "the last message must be user or tool")

    def tool_calls(self, i: int, calls: Any, seen: set[str]) -> set[str]:
        if not isinstance(calls, list):
            raise self.fail("tool_call_shape", f"messages[{i}].tool_calls must be a list")
        ids: set[str] = set()
        for j, c in enumerate(calls):
            where = f"messages[{i}].tool_calls[{j}]"
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(fn, dict) or c.get("type") != "function":
                raise self.fail("tool_call_shape", f"{where} is not a function call")
            cid = c.get("id")
            if not isinstance(cid, str) or len(cid) > ID_MAX or not ID_PATTERN.fullmatch(cid):
                raise self.fail("tool_call_id_format", f"{where} id {cid!r}")
            if cid in seen:
                raise self.fail("duplicate_tool_call_id", f"{where} id {cid!r} reused")
            name = fn.get("name")
            if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
                raise self.fail("tool_name_format", f"{where} name {name!r}")
            raw = fn.get("arguments")
            if not isinstance(raw, str):
                raise self.fail("tool_call_shape", f"{where} arguments must be a JSON string")
            try:
                args = json.loads(raw)
            except (TypeError, ValueError) as exc:
                raise self.fail("tool_call_shape", f"{where} arguments not JSON ({exc})") from exc
            if not isinstance(args, dict):
                raise self.fail("tool_call_shape", f"{where} arguments must be a JSON object")
            seen.add(cid)
            ids.add(cid)
        return ids


ADAPTER = OpenAIChatAdapter()
serialize = ADAPTER.serialize
validate = ADAPTER.validate
count_tokens = ADAPTER.count_tokens
