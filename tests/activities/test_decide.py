"""``plan_calls``: a model's reply turned into the calls a research turn runs.

Pure: no store, no model — the reply is built here as the provider would return it.
"""

from __future__ import annotations

from activities.decide import plan_calls
from activities.providers.base import ProposedToolCall, ProviderDecision
from contracts.activity_messages import MAX_TOOL_ARGUMENT_CHARS


def _reply(*calls: ProposedToolCall) -> ProviderDecision:
    return ProviderDecision(tool_calls=list(calls), model="m", provider="p")


def test_calls_get_runtime_ids_and_keep_their_order() -> None:
    planned = plan_calls(_reply(
        ProposedToolCall(provider_call_id="call_abc", name="search",
                         arguments={"source": "s", "query": "q"}),
        ProposedToolCall(provider_call_id="call_def", name="read",
                         arguments={"source": "s", "path": "p", "start_line": 1,
                                    "end_line": 2})), turn=7, max_calls=8)
    assert [(c.call_id, c.tool_name, c.refusal) for c in planned] == [
        ("t0007-1", "search", None), ("t0007-2", "read", None)]


def test_every_oddity_is_a_refused_call_not_an_error() -> None:
    planned = plan_calls(_reply(
        ProposedToolCall(provider_call_id="a", name="x" * 300),
        ProposedToolCall(provider_call_id="b", name="search", malformed="{not json"),
        ProposedToolCall(provider_call_id="c", name="search",
                         arguments={"query": "q" * (MAX_TOOL_ARGUMENT_CHARS + 1)})),
        turn=1, max_calls=8)
    kinds = [c.refusal.split(":")[0] if c.refusal else None for c in planned]
    assert kinds == ["unknown_tool", "malformed_arguments", "arguments_over_limit"]
    assert all(c.arguments == {} for c in planned)  # nothing oversized travels in history
    assert len(planned[0].tool_name) == 64


def test_a_flood_of_calls_becomes_the_limit_plus_one_refusal() -> None:
    flood = [ProposedToolCall(provider_call_id=f"c{i}", name="list", arguments={"source": "s"})
             for i in range(500)]
    planned = plan_calls(_reply(*flood), turn=3, max_calls=8)
    assert len(planned) == 9
    assert all(c.refusal is None for c in planned[:8])
    assert planned[8].refusal is not None
    assert planned[8].refusal.startswith("too_many_calls: 500 tool calls asked, at most 8")
