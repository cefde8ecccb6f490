"""The replaying model API the job tests talk to answers a repeated request the same way.

A retried ``decide`` attempt resends its sealed request; handing it the next scripted turn
made ``test_bad_model_replies_are_typed_tool_errors_not_crashes`` fail in CI on a loaded
machine. Plain HTTP against the real local server (no Temporal needed).
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.workflows.replay_api import distinct_requests, replaying_api


def _post(base_url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        reply: dict[str, Any] = json.loads(response.read())
    return reply


def _calls(reply: dict[str, Any]) -> list[str]:
    return [call["function"]["name"]
            for call in reply["choices"][0]["message"].get("tool_calls", [])]


def test_a_resent_request_gets_the_reply_it_got_before_not_the_next_turn() -> None:
    script: Any = [[("search", {"query": "a"})], [("finish", {"summary": "done"})]]
    turn_one = {"model": "m", "messages": [{"role": "user", "content": "one"}],
                "tools": [{"type": "function", "function": {"name": "search"}}]}
    turn_two = {**turn_one, "messages": [*turn_one["messages"],
                                         {"role": "assistant", "content": "x"}]}
    with replaying_api(script) as (base_url, requests):
        first = _post(base_url, turn_one)
        again = _post(base_url, dict(reversed(turn_one.items())))  # same body, other key order
        second = _post(base_url, turn_two)
    assert _calls(first) == ["search"] and again == first
    assert _calls(second) == ["finish"]
    assert len(requests) == 3 and distinct_requests(requests) == [turn_one, turn_two]
