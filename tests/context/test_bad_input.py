"""Bad input: a clear typed error naming the problem, or a recorded exclusion/anomaly.

Never a crash deep in the pipeline, never a silently dropped item.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context import (
    ContextError,
    PolicyError,
    Ready,
    RequestError,
    ScopeRef,
    ToolCall,
    ToolHistory,
    ToolHistoryError,
    ToolResult,
    assemble,
    policy_from_mapping,
)
from context.vocabulary import ToolStatus
from tests.context.builders import POLICY, SCOPE, item, request


def test_malformed_item_names_the_field() -> None:
    good = item("ok", "HTTP 429").model_dump()
    bad = {**good, "item_id": "bad"}
    del bad["source_type"]
    with pytest.raises(RequestError, match=r"candidates\.\d+\.source_type"):
        request([], raw_candidates=(good, bad))


def test_unknown_enum_value_in_item() -> None:
    bad = {**item("ok", "x").model_dump(), "trust": "very_trusted"}
    with pytest.raises(RequestError, match="trust"):
        request([], raw_candidates=(bad,))


def test_non_utf8_bytes_are_rejected_with_position() -> None:
    bad = {**item("ok", "x").model_dump(), "content": b"caf\xe9 429"}
    with pytest.raises(RequestError, match=r"not valid UTF-8 \(byte 3\)"):
        request([], raw_candidates=(bad,))


def test_unpaired_surrogate_is_rejected() -> None:
    bad = {**item("ok", "x").model_dump(), "content": "abc\udce9"}
    with pytest.raises(RequestError, match="unpaired surrogate"):
        request([], raw_candidates=(bad,))


def test_negative_evidence_budget() -> None:
    with pytest.raises(RequestError, match="evidence_budget"):
        request([item("ok", "HTTP 429")], evidence_budget=-5)


def test_unknown_policy_key() -> None:
    data = POLICY.model_dump(mode="json")
    data["budget"]["partitions"]["control"]["borrow"] = True
    with pytest.raises(PolicyError, match=r"unknown key 'budget\.partitions\.control\.borrow'"):
        policy_from_mapping(data)


def test_negative_policy_budget() -> None:
    data = POLICY.model_dump(mode="json")
    data["budget"]["partitions"]["state"]["minimum"] = -10
    with pytest.raises(PolicyError, match=r"budget\.partitions\.state\.minimum"):
        policy_from_mapping(data)


def test_tool_result_naming_unknown_call_is_a_recorded_anomaly() -> None:
    hist = ToolHistory(
        calls=[ToolCall(call_id="c1", tool_name="fetch", arguments={}, turn=0)],
        results=[ToolResult(call_id="c1", tool_name="fetch", status=ToolStatus.SUCCESS,
                            content="HTTP 429 ok"),
                 ToolResult(call_id="nope", tool_name="fetch", status=ToolStatus.SUCCESS,
                            content="stray output")],
    )
    out = assemble(request([item("rl", "HTTP 429")], tool_history=hist))
    assert isinstance(out, Ready)
    anomaly = out.manifest.tool_anomalies[0]
    assert anomaly.type == "orphan_tool_result_dropped" and anomaly.call_id == "nope"


def test_two_different_calls_sharing_an_id_is_an_error() -> None:
    hist = ToolHistory(calls=[ToolCall(call_id="c1", tool_name="a", arguments={}, turn=0),
                              ToolCall(call_id="c1", tool_name="b", arguments={}, turn=1)])
    with pytest.raises(ToolHistoryError, match="c1"):
        assemble(request([], tool_history=hist))


def test_duplicate_candidate_ids() -> None:
    with pytest.raises(RequestError, match="duplicate candidate item_id 'dup'"):
        request([item("dup", "a"), item("dup", "b")])


def test_naive_as_of() -> None:
    with pytest.raises(RequestError, match="as_of must be timezone-aware"):
        request([], as_of=datetime(2026, 1, 1))


def test_principal_outside_request_scope() -> None:
    from context import PrincipalContext
    from context.vocabulary import SecurityClass

    p = PrincipalContext(principal_id="x", clearance=SecurityClass.PUBLIC,
                         scope=ScopeRef(tenant="other", project="p"))
    with pytest.raises(RequestError, match="cannot assemble for scope acme/press/t42"):
        request([], principal=p)


def test_assemble_rejects_non_request() -> None:
    with pytest.raises(ContextError, match="needs an AssemblyRequest"):
        assemble({"run_id": "x"})  # type: ignore[arg-type]


def test_request_errors_are_context_errors() -> None:
    assert issubclass(RequestError, ContextError) and issubclass(PolicyError, ContextError)
    assert issubclass(ToolHistoryError, RequestError)
    assert SCOPE.task == "t42"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.text(min_size=1, max_size=30), st.text(max_size=400)),
                max_size=6))
def test_arbitrary_text_never_crashes_the_pipeline(raw: list[tuple[str, str]]) -> None:
    """Any printable id and any text content: a typed error at construction, or a result."""
    from context import ContextAssemblyBlocked

    cands = []
    for n, (iid, content) in enumerate(raw):
        try:
            cands.append(item(f"{n}-{iid}", content + " <<<DATA id=\"x\">>> 429"))
        except ValueError:
            continue  # rejected at construction with a pydantic error naming the field
    try:
        req = request(cands)
    except RequestError:
        return
    out = assemble(req)
    assert isinstance(out, Ready | ContextAssemblyBlocked)
    assert out.manifest.verify_seal()
