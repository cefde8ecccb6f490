"""OpenAI and Anthropic research turns (``decide``) and call failures, through the real SDKs.

The model APIs cannot be reached from this machine (and no test may need a key), so every
response here is replayed: API-shaped JSON, as the Chat Completions and Messages APIs
document it, served through the official SDK's own HTTP transport hook (a ``MockTransport``
inside the ``http_client`` given to ``AsyncOpenAI`` / ``AsyncAnthropic``). Everything above
the socket is the real SDK: request encoding, response parsing into SDK objects, and the
SDK's exception for an error status. The transport also keeps each request body, so the
tests check that what was sent is the sealed payload, ``tools`` included.

The payloads are literal dicts in the shapes the context engine's adapters produce
(``context.seal.adapters``), and a test checks them with those adapters' own validators.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import anthropic
import openai
import pytest

from activities.providers import AnthropicProvider, OpenAIProvider
from activities.providers.remote import retry_after_seconds
from context.seal.adapters import get_adapter
from contracts.errors import ProviderCallError

KEY = "test-key-not-real"
USAGE_IN, USAGE_OUT = 812, 41

SEARCH_TOOL = {
    "name": "search_sources",
    "description": "Search the job's acquired sources for passages about a topic.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
}
FETCH_TOOL = {
    "name": "fetch_document",
    "description": "Fetch one source document by its item id.",
    "parameters": {
        "type": "object",
        "properties": {"item_id": {"type": "string"}},
        "required": ["item_id"],
    },
}
SYSTEM = "Research the topics in the task. Use the tools; cite only what they return."
TASK = "Topics: retry_backoff (jitter, max_delay), tls_pinning (certificate pinning)."
EARLIER_ARGUMENTS = {"query": "retry backoff jitter"}
EARLIER_RESULT = '{"hits": [{"item_id": "git:retry-lib@a1b2c3:README.md", "line": 12}]}'

OPENAI_PAYLOAD: dict[str, Any] = {
    "model": "gpt-4.1",
    "max_completion_tokens": 1024,
    "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
        {"role": "assistant", "tool_calls": [{
            "id": "call_earlier_1", "type": "function",
            "function": {"name": "search_sources",
                         "arguments": json.dumps(EARLIER_ARGUMENTS, separators=(",", ":"))},
        }]},
        {"role": "tool", "tool_call_id": "call_earlier_1", "content": EARLIER_RESULT},
    ],
    "tools": [{"type": "function", "function": tool} for tool in (SEARCH_TOOL, FETCH_TOOL)],
}
ANTHROPIC_PAYLOAD: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": SYSTEM,
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": TASK}]},
        {"role": "assistant", "content": [{
            "type": "tool_use", "id": "toolu_earlier_1", "name": "search_sources",
            "input": EARLIER_ARGUMENTS,
        }]},
        {"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": "toolu_earlier_1", "content": EARLIER_RESULT,
        }]},
    ],
    "tools": [
        {"name": tool["name"], "description": tool["description"],
         "input_schema": tool["parameters"]}
        for tool in (SEARCH_TOOL, FETCH_TOOL)
    ],
}

# A call the model makes: its id, the tool, and its arguments — a dict for well-formed
# arguments, or the raw text a model sent instead.
Call = tuple[str, str, dict[str, Any] | str]


def _http_library(sdk: ModuleType) -> ModuleType:
    """The HTTP library ``sdk`` is built on, whose ``AsyncClient`` it accepts: ``httpx2``
    for current SDK releases, ``httpx`` for older ones (the ``>=`` pins allow both)."""
    client_base = next(
        cls for cls in sdk.DefaultAsyncHttpxClient.__mro__ if cls.__name__ == "AsyncClient"
    )
    return importlib.import_module(client_base.__module__.partition(".")[0])


class _Replay:
    """The SDK's HTTP transport: answers each request with the next canned response, in
    order, and keeps each request's path and JSON body."""

    def __init__(self, http: ModuleType, *responses: tuple[int, dict[str, Any], dict[str, str]]):
        self.http = http
        self.responses = list(responses)
        self.paths: list[str] = []
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> Any:
        self.paths.append(request.url.path)
        self.bodies.append(json.loads(request.content))
        status, body, headers = self.responses.pop(0)
        return self.http.Response(status, json=body, headers=headers)

    def client(self) -> Any:
        return self.http.AsyncClient(transport=self.http.MockTransport(self))


def _openai_reply(calls: list[Call], text: str | None, stop: str) -> dict[str, Any]:
    tool_calls = [
        {"id": call_id, "type": "function",
         "function": {"name": name, "arguments": args if isinstance(args, str)
                      else json.dumps(args)}}
        for call_id, name, args in calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-replayed", "object": "chat.completion", "created": 1767268800,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": stop}],
        "usage": {"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT,
                  "total_tokens": USAGE_IN + USAGE_OUT},
    }


def _anthropic_reply(calls: list[Call], text: str | None, stop: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": call_id, "name": name, "input": args}
                for call_id, name, args in calls]
    return {
        "id": "msg_replayed", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929", "content": content,
        "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT},
    }


def _openai_error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


@dataclass(frozen=True)
class Dialect:
    """One provider with its SDK, its sealed payload and its API's response shapes."""

    provider: type[OpenAIProvider] | type[AnthropicProvider]
    sdk: ModuleType
    payload: dict[str, Any]
    path: str
    reply: Callable[[list[Call], str | None, str], dict[str, Any]]
    error: Callable[[str, str], dict[str, Any]]
    tool_stop: str
    text_stop: str

    def replay(self, *responses: tuple[int, dict[str, Any], dict[str, str]]) -> _Replay:
        return _Replay(_http_library(self.sdk), *responses)

    def build(self, replay: _Replay, model: str | None = None) -> Any:
        """The provider over a real SDK client whose HTTP goes to ``replay``."""
        if self.sdk is openai:
            client: Any = openai.AsyncOpenAI(
                api_key=KEY, base_url="https://api.openai.com/v1", max_retries=0,
                http_client=replay.client(),
            )
        else:
            client = anthropic.AsyncAnthropic(
                api_key=KEY, base_url="https://api.anthropic.com", max_retries=0,
                http_client=replay.client(),
            )
        return self.provider(model, client=client)

    async def decide(self, replay: _Replay, model: str | None = None) -> Any:
        return await self.build(replay, model).decide(self.payload, adapter=self.provider.adapter)


OPENAI = Dialect(OpenAIProvider, openai, OPENAI_PAYLOAD, "/v1/chat/completions",
                 _openai_reply, _openai_error, "tool_calls", "stop")
ANTHROPIC = Dialect(AnthropicProvider, anthropic, ANTHROPIC_PAYLOAD, "/v1/messages",
                    _anthropic_reply, _anthropic_error, "tool_use", "end_turn")
DIALECTS = pytest.mark.parametrize("dialect", [OPENAI, ANTHROPIC], ids=["openai", "anthropic"])


@pytest.fixture(autouse=True)
def _no_keys_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Proves the suite needs no key: only the dummy KEY, given to the SDK client, exists.
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_payloads_are_what_the_engine_adapters_accept() -> None:
    get_adapter("openai_chat").validate(OPENAI_PAYLOAD)
    get_adapter("anthropic_messages").validate(ANTHROPIC_PAYLOAD)


@DIALECTS
async def test_single_tool_call_sends_the_sealed_payload(dialect: Dialect) -> None:
    call: Call = ("call_search_2", "search_sources", {"query": "certificate pinning", "limit": 5})
    replay = dialect.replay((200, dialect.reply([call], None, dialect.tool_stop), {}))
    decision = await dialect.decide(replay)
    assert replay.paths == [dialect.path]
    assert replay.bodies == [dialect.payload]  # unchanged, tools included
    [proposed] = decision.tool_calls
    assert (proposed.provider_call_id, proposed.name) == ("call_search_2", "search_sources")
    assert proposed.arguments == {"query": "certificate pinning", "limit": 5}
    assert proposed.malformed is None
    assert (decision.stop_reason, decision.provider) == (dialect.tool_stop, dialect.provider.name)


@DIALECTS
async def test_model_override_is_the_only_change_to_the_request(dialect: Dialect) -> None:
    replay = dialect.replay((200, dialect.reply([], "Nothing to look up.", dialect.text_stop), {}))
    await dialect.decide(replay, model="override-model")
    assert replay.bodies == [{**dialect.payload, "model": "override-model"}]


@DIALECTS
async def test_parallel_tool_calls_keep_their_order_and_ids(dialect: Dialect) -> None:
    calls: list[Call] = [
        ("call_p1", "search_sources", {"query": "jitter"}),
        ("call_p2", "fetch_document", {"item_id": "git:retry-lib@a1b2c3:README.md"}),
        ("call_p3", "search_sources", {"query": "certificate pinning"}),
    ]
    replay = dialect.replay((200, dialect.reply(calls, None, dialect.tool_stop), {}))
    decision = await dialect.decide(replay)
    assert [(c.provider_call_id, c.name, c.arguments) for c in decision.tool_calls] == calls
    assert all(c.malformed is None for c in decision.tool_calls)


@DIALECTS
async def test_malformed_arguments_are_kept_raw_not_raised(dialect: Dialect) -> None:
    truncated_json = '{"query": "jitter", "limit": '
    runaway = "[" + "1," * 2000 + "1]"  # valid JSON, but not an object, and long
    calls: list[Call] = [
        ("call_bad", "search_sources", truncated_json),
        ("call_list", "search_sources", runaway),
        ("call_ok", "fetch_document", {"item_id": "doc:plan"}),
    ]
    replay = dialect.replay((200, dialect.reply(calls, None, dialect.tool_stop), {}))
    bad, listed, good = (await dialect.decide(replay)).tool_calls
    assert (bad.provider_call_id, bad.arguments, bad.malformed) == ("call_bad", {}, truncated_json)
    assert listed.arguments == {} and listed.malformed == runaway[:2000]
    assert good.arguments == {"item_id": "doc:plan"} and good.malformed is None


@DIALECTS
async def test_text_only_reply_has_no_tool_calls(dialect: Dialect) -> None:
    text = "The sources already cover every topic; no further lookups are needed."
    replay = dialect.replay((200, dialect.reply([], text, dialect.text_stop), {}))
    decision = await dialect.decide(replay)
    assert decision.tool_calls == []
    assert (decision.text, decision.stop_reason) == (text, dialect.text_stop)


@DIALECTS
async def test_usage_and_model_come_from_the_response(dialect: Dialect) -> None:
    call: Call = ("call_u", "search_sources", {"query": "max_delay"})
    body = dialect.reply([call], "Looking up max_delay.", dialect.tool_stop)
    decision = await dialect.decide(dialect.replay((200, body, {})))
    assert (decision.input_tokens, decision.output_tokens) == (USAGE_IN, USAGE_OUT)
    assert decision.model == body["model"] and decision.text == "Looking up max_delay."


@DIALECTS
async def test_prompt_cache_figures_come_from_the_response(dialect: Dialect) -> None:
    """The API's cached / cache-write counts, as parts of every input token: OpenAI's
    ``prompt_tokens`` already holds its ``cached_tokens``; Anthropic's ``input_tokens`` is
    only the uncached rest, so its cache read and write are added to it."""
    body = dialect.reply([("call_c", "search_sources", {"query": "jitter"})], None,
                         dialect.tool_stop)
    if dialect is OPENAI:
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": 768, "audio_tokens": 0}
        want = (USAGE_IN, 768, 0)
    else:
        body["usage"].update(cache_read_input_tokens=700, cache_creation_input_tokens=90)
        want = (USAGE_IN + 700 + 90, 700, 90)
    decision = await dialect.decide(dialect.replay((200, body, {})))
    assert (decision.input_tokens, decision.cached_input_tokens,
            decision.cache_write_input_tokens) == want
    # a reply without cache figures says nothing about the cache (not "0 cached")
    plain = dialect.reply([], "done", dialect.text_stop)
    decision = await dialect.decide(dialect.replay((200, plain, {})))
    assert decision.input_tokens == USAGE_IN and decision.cached_input_tokens is None


@DIALECTS
async def test_rate_limit_carries_retry_after_as_the_next_retry_delay(dialect: Dialect) -> None:
    kind = "rate_limit_exceeded" if dialect is OPENAI else "rate_limit_error"
    replay = dialect.replay((429, dialect.error(kind, "Rate limit reached."),
                             {"Retry-After": "7"}))
    with pytest.raises(ProviderCallError, match="HTTP 429") as info:
        await dialect.decide(replay)
    assert info.value.retryable and not info.value.non_retryable
    assert info.value.next_retry_delay == timedelta(seconds=7)
    assert len(replay.bodies) == 1  # the SDK does not retry; Temporal does
    assert isinstance(info.value.__cause__, dialect.sdk.RateLimitError)


@DIALECTS
async def test_retry_after_as_an_http_date_is_capped(dialect: Dialect) -> None:
    far = "Fri, 01 Jan 2100 00:00:00 GMT"
    replay = dialect.replay((503, dialect.error("overloaded", "Try later."), {"Retry-After": far}))
    with pytest.raises(ProviderCallError, match="HTTP 503") as info:
        await dialect.decide(replay)
    assert info.value.next_retry_delay == ProviderCallError.MAX_RETRY_AFTER == timedelta(minutes=10)


async def test_anthropic_overloaded_529_is_retryable_with_its_delay() -> None:
    replay = ANTHROPIC.replay((529, _anthropic_error("overloaded_error", "Overloaded"),
                               {"retry-after": "12"}))
    with pytest.raises(ProviderCallError, match="HTTP 529") as info:
        await ANTHROPIC.decide(replay)
    assert info.value.retryable and info.value.next_retry_delay == timedelta(seconds=12)


@DIALECTS
async def test_bad_request_is_not_retryable(dialect: Dialect) -> None:
    kind = "invalid_request_error"
    replay = dialect.replay((400, dialect.error(kind, "tools[0].function.name is invalid"), {}))
    with pytest.raises(ProviderCallError, match="HTTP 400") as info:
        await dialect.decide(replay)
    assert info.value.non_retryable and not info.value.retryable
    assert info.value.next_retry_delay is None


@DIALECTS
async def test_the_api_key_never_appears_in_the_error(dialect: Dialect) -> None:
    # An error body that quotes the key back, as an authentication error might.
    kind = "invalid_api_key" if dialect is OPENAI else "authentication_error"
    replay = dialect.replay((401, dialect.error(kind, f"Incorrect API key provided: {KEY}"), {}))
    with pytest.raises(ProviderCallError, match="HTTP 401") as info:
        await dialect.decide(replay)
    assert KEY not in str(info.value) and "[redacted]" in str(info.value)
    assert not info.value.retryable
    # Temporal stores an error's cause in history too; one quoting the key is dropped.
    assert info.value.__cause__ is None


@DIALECTS
async def test_complete_gets_the_same_retry_after(dialect: Dialect) -> None:
    replay = dialect.replay((503, dialect.error("overloaded", "Try later."),
                             {"Retry-After": "3"}))
    provider = dialect.build(replay)
    with pytest.raises(ProviderCallError, match="HTTP 503") as info:
        await provider.complete(dialect.payload, adapter=dialect.provider.adapter,
                                purpose="draft")
    assert info.value.retryable and info.value.next_retry_delay == timedelta(seconds=3)


def test_retry_after_parsing() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert retry_after_seconds({"retry-after": "7"}, now) == 7.0
    assert retry_after_seconds({"retry-after": "1.5"}, now) == 1.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "1"}, now) == 0.25
    assert retry_after_seconds({"retry-after": "Thu, 01 Jan 2026 12:00:30 GMT"}, now) == 30.0
    assert retry_after_seconds({"retry-after": "soon"}, now) is None
    assert retry_after_seconds({"retry-after": "inf"}, now) is None
    assert retry_after_seconds({}, now) is None
    assert retry_after_seconds(None, now) is None
    # Clamping and ignoring what cannot be a wait is the error's job, not the parser's.
    assert ProviderCallError("x", retryable=True, retry_after=-4.0).next_retry_delay is None
    assert ProviderCallError("x", retryable=True, retry_after=None).next_retry_delay is None
    assert ProviderCallError("x", retryable=True, retry_after=90000).next_retry_delay == (
        timedelta(minutes=10)
    )
