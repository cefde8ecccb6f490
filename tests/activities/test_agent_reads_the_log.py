"""The offline research agent learns what it searched and noted from the research log
and its fold (``context.tools.fold``), not only from results still shown verbatim.

Under the research-log layout only the last turn's results stay verbatim; an agent that
knew its past only from visible results would search again what a log line already
reports (measured: eval recall 0.53 and 127 turns before it read the log). Real engine
assemblies read back through the offline provider's own request reader; nothing faked.
"""

from __future__ import annotations

import json

from activities.providers.payload import read_request
from activities.providers.research_agent import Agent, picture
from context import Ready, assemble
from context.policy import ContextPolicy
from context.tool_history import ToolCall, ToolHistory, ToolResult
from context.vocabulary import ToolStatus
from tests.context.builders import POLICY, request

REV = "f0ee4edd56fb4814cb15d4859098732e49b8cfc9"
FOLDED = ContextPolicy.model_validate({
    **POLICY.model_dump(mode="json"),
    "tool_pairs": {**POLICY.tool_pairs.model_dump(mode="json"), "fold_every": 10,
                   "keep_recent": 1}})


def history(turns: int) -> ToolHistory:
    """Per turn: a search, a read of what it found, and a note citing the read."""
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for turn in range(1, turns + 1):
        search, read, note = (f"t{turn:04d}-{n}" for n in (1, 2, 3))
        line = 10 * turn
        calls += [
            ToolCall(call_id=search, tool_name="search", turn=turn,
                     arguments={"source": "stdlib", "query": f"term{turn}"}),
            ToolCall(call_id=read, tool_name="read", turn=turn, arguments={
                "source": "stdlib", "path": "Lib/a.py", "start_line": line,
                "end_line": line + 3}),
            ToolCall(call_id=note, tool_name="note", turn=turn, arguments={
                "topic": f"topic{turn % 3}", "claim": f"def term{turn}(): the claim, said once",
                "citations": [{"call_id": read, "source": "stdlib", "revision": REV,
                               "path": "Lib/a.py", "start_line": line,
                               "end_line": line}]})]
        results += [
            ToolResult(call_id=search, tool_name="search", status=ToolStatus.SUCCESS,
                       content=json.dumps({"source": "stdlib", "query": f"term{turn}",
                                           "files": []})),
            ToolResult(call_id=read, tool_name="read", status=ToolStatus.SUCCESS,
                       content=json.dumps({"source": "stdlib", "path": "Lib/a.py",
                                           "revision": REV, "start_line": line,
                                           "end_line": line + 3, "lines": ["x"] * 4})),
            ToolResult(call_id=note, tool_name="note", status=ToolStatus.SUCCESS,
                       content=json.dumps({"accepted": True, "topic": f"topic{turn % 3}"}))]
    return ToolHistory(calls=calls, results=results)


def test_searches_reads_and_notes_of_logged_and_folded_turns_are_known() -> None:
    out = assemble(request(tool_history=history(23), policy=FOLDED))
    assert isinstance(out, Ready)
    placement = {p.call_id: p.placement for p in out.manifest.tool_pairs}
    assert placement["t0003-1"] == "folded" and placement["t0022-1"] == "logged"
    seen = picture(read_request(out.serialized.payload, "openai_chat"))
    # a folded search, a logged one and the verbatim one: none is searched again
    for turn in (3, 22, 23):
        assert ("stdlib", f"term{turn}") in seen.searched or turn == 23
        assert Agent(seen)._answered("stdlib", f"term{turn}"), turn
    assert not Agent(seen)._answered("stdlib", "term99")
    # every accepted note, folded, logged or verbatim, with its claim
    noted = {call for calls in seen.notes.values() for call in calls}
    assert noted == {f"t{turn:04d}-3" for turn in range(1, 24)}
    assert "def term3(): the claim, said once" in seen.noted_text["topic0"]
    assert "def term22(): the claim, said once" in seen.noted_text["topic1"]


def test_a_search_whose_hits_left_the_request_unread_is_asked_once_more() -> None:
    """A topic's searches spread over two turns: the first turn's hits are only a log line
    (``-> success (3 hits)``) by the time the topic could read them. The agent searches
    that query once more rather than call the topic exhausted — and only once: a second
    logged occurrence, or none with hits, exhausts it."""
    from activities.providers.research_agent import _log_line

    def seen(*lines: str) -> Agent:
        out = assemble(request(tool_history=history(1), policy=FOLDED))
        assert isinstance(out, Ready)
        picture_ = picture(read_request(out.serialized.payload, "openai_chat"))
        picture_.topics, picture_.sources, picture_.results = [("retry", ["Retry-After"])], \
            ["httpkit"], []
        for line in lines:
            _log_line(picture_, line)
        return Agent(picture_)

    once = seen('t0005-1 search {"query":"Retry-After","source":"httpkit"} -> success (3 hits)')
    assert once._step("retry", ["Retry-After"]) == [
        ("search", {"source": "httpkit", "query": "Retry-After"})]
    twice = seen(
        't0005-1 search {"query":"Retry-After","source":"httpkit"} -> success (3 hits)',
        't0007-1 search {"query":"Retry-After","source":"httpkit"} -> success (3 hits)')
    assert twice._step("retry", ["Retry-After"]) is None
    empty = seen('t0005-1 search {"query":"Retry-After","source":"httpkit"} -> success (0 hits)')
    assert empty._step("retry", ["Retry-After"]) is None
