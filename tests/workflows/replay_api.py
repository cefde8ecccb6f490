"""A local HTTP server that answers Chat Completions requests with scripted replies.

No model API is reachable from this machine, so tests that run a whole job with the
``openai`` provider point the official SDK (``OPENAI_BASE_URL``) at this server: the real
SDK encodes the sealed request and sends it over a real socket; the server replays the
next API-shaped response of its script and keeps every request body for the test to read.
A request with ``tools`` is a research turn and gets the next scripted turn; one without
(a draft) gets a fixed article. A request to ``/v1/messages`` is answered in the Anthropic
Messages shape (``replayed_anthropic`` points that SDK here), so both official SDKs run a
whole job against it.

Prompt-cache figures are replayed as the APIs report them: from the second research turn
on, an OpenAI reply says :data:`CACHED_TOKENS` of its ``prompt_tokens`` were cached
(``prompt_tokens_details.cached_tokens``); an Anthropic reply says its first turn wrote
:data:`CACHED_TOKENS` to the cache (``cache_creation_input_tokens``) and later turns read
them (``cache_read_input_tokens``), with ``input_tokens`` the uncached rest — every reply
still totals 1000 input tokens.

A request the server has already answered gets the same answer again. A retried ``decide``
attempt sends exactly the sealed request its first attempt sent — on a loaded machine an
attempt can miss its heartbeat after the reply arrived — and a model asked the same
question must not be handed the *next* turn's script (seen in CI: turn one's retry got
turn two's ``finish``). The test reads ``requests`` for every body sent, retries included;
``distinct_requests`` gives one per turn.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: one research turn's reply: (tool name, arguments as the model sent them — a dict, or a
#: raw string for arguments that are not JSON)
Turn = list[tuple[str, dict[str, Any] | str]]

DRAFT_TEXT = "# Draft\n\nWritten by the replayed model from the notes.\n"
#: the input tokens a replayed research reply reports as read from (or written to) the cache
CACHED_TOKENS = 640


def completion(turn_number: int, calls: Turn) -> dict[str, Any]:
    tool_calls = [{
        "id": f"call_{turn_number}_{index}", "type": "function",
        "function": {"name": name,
                     "arguments": arguments if isinstance(arguments, str)
                     else json.dumps(arguments)},
    } for index, (name, arguments) in enumerate(calls)]
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"id": f"chatcmpl-{turn_number}", "object": "chat.completion", "created": 1,
            "model": "replayed-model",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
                      "prompt_tokens_details": {
                          "cached_tokens": CACHED_TOKENS if turn_number > 1 else 0}}}


def anthropic_message(turn_number: int, calls: Turn) -> dict[str, Any]:
    """One research turn as the Messages API answers it (``tool_use`` blocks)."""
    content = [{"type": "tool_use", "id": f"toolu_{turn_number}_{index}", "name": name,
                "input": arguments if isinstance(arguments, dict) else {"raw": arguments}}
               for index, (name, arguments) in enumerate(calls)]
    first = turn_number == 1
    return {"id": f"msg_{turn_number}", "type": "message", "role": "assistant",
            "model": "replayed-model", "content": content,
            "stop_reason": "tool_use" if content else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1000 - CACHED_TOKENS, "output_tokens": 50,
                      "cache_creation_input_tokens": CACHED_TOKENS if first else 0,
                      "cache_read_input_tokens": 0 if first else CACHED_TOKENS}}


def anthropic_draft() -> dict[str, Any]:
    return {"id": "msg_draft", "type": "message", "role": "assistant",
            "model": "replayed-model", "content": [{"type": "text", "text": DRAFT_TEXT}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 900, "output_tokens": 20}}


def draft_completion() -> dict[str, Any]:
    return {"id": "chatcmpl-draft", "object": "chat.completion", "created": 1,
            "model": "replayed-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": DRAFT_TEXT},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920}}


def _request_key(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def distinct_requests(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``requests`` without the repeats a retried attempt sent: one body per model call."""
    seen: set[str] = set()
    distinct = []
    for body in requests:
        key = _request_key(body)
        if key not in seen:
            seen.add(key)
            distinct.append(body)
    return distinct


@contextmanager
def replaying_api(script: list[Turn], *, rate_limited: int = 0,
                  keys: list[str] | None = None
                  ) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve ``script`` (one entry per research turn, then empty replies); yields the base
    URL and the list the request bodies are appended to. The first ``rate_limited``
    research requests are answered 429 with ``Retry-After: 1``, as a busy API does.
    ``keys``, when given, gets each request's bearer token (the API key the SDK sent)."""
    requests: list[dict[str, Any]] = []
    turns = iter(enumerate(script, start=1))
    limited = [rate_limited]
    answered: dict[str, dict[str, Any]] = {}  # request key -> the reply it got
    lock = threading.Lock()  # ThreadingHTTPServer: one thread per request

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            anthropic = self.path.endswith("/messages")
            if keys is not None:
                keys.append((self.headers.get("Authorization") or "").removeprefix("Bearer "))
            requests.append(body)
            if body.get("tools") and limited[0] > 0:
                limited[0] -= 1
                error = json.dumps({"error": {"message": "Rate limit reached",
                                              "type": "requests", "code": "rate_limit"}})
                self.send_response(429)
                self.send_header("Content-Type", "application/json")
                self.send_header("Retry-After", "1")
                self.send_header("Content-Length", str(len(error)))
                self.end_headers()
                self.wfile.write(error.encode())
                return
            with lock:
                key = _request_key(body)
                if key in answered:
                    reply = answered[key]
                elif body.get("tools"):
                    number, calls = next(turns, (len(requests), []))
                    reply = answered[key] = (anthropic_message(number, calls) if anthropic
                                             else completion(number, calls))
                else:
                    reply = answered[key] = anthropic_draft() if anthropic \
                        else draft_completion()
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def replayed_openai(monkeypatch: Any, script: list[Turn], *, rate_limited: int = 0
                    ) -> Iterator[list[dict[str, Any]]]:
    """``replaying_api`` with this process's OpenAI SDK pointed at it (a worker started
    inside the block builds its provider from these variables); yields the request bodies."""
    with replaying_api(script, rate_limited=rate_limited) as (base_url, requests):
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-real")
        yield requests


@contextmanager
def replayed_anthropic(monkeypatch: Any, script: list[Turn]) -> Iterator[list[dict[str, Any]]]:
    """``replaying_api`` with this process's Anthropic SDK pointed at it; yields the bodies."""
    with replaying_api(script) as (base_url, requests):
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
        yield requests
