"""Tool pairing: one result per call in call order; each repair is a typed anomaly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context.errors import ToolHistoryError
from context.items import sha256_text
from context.tool_history import (
    CANONICALIZATION,
    ToolCall,
    ToolHistory,
    ToolResult,
    canonical_argument_hash,
)
from context.tools.pairing import pair_tool_history
from context.vocabulary import AnomalyType, ToolStatus


def call(cid: str, turn: int = 1, tool: str = "read_source", **args: object) -> ToolCall:
    return ToolCall(call_id=cid, tool_name=tool, arguments=dict(args) or {"id": cid}, turn=turn)


def result(
    cid: str,
    content: str = "",
    status: ToolStatus = ToolStatus.SUCCESS,
    tool: str = "read_source",
    **kw: object,
) -> ToolResult:
    return ToolResult(
        call_id=cid, tool_name=tool, status=status, content=content or f"output of {cid}", **kw
    )


def types(res: object) -> list[AnomalyType]:
    return [a.type for a in res.anomalies]  # type: ignore[attr-defined]


def test_argument_hash_ignores_key_order_and_whitespace() -> None:
    a = canonical_argument_hash("read", {"repo": "pi", "lines": [1, 2]})
    b = canonical_argument_hash("read", {"lines": [1, 2], "repo": "pi"})
    assert a == b and a.startswith("sha256:")
    assert a != canonical_argument_hash("grep", {"repo": "pi", "lines": [1, 2]})
    assert a == sha256_text('["read",{"lines":[1,2],"repo":"pi"}]')


def test_clean_history_pairs_without_anomalies() -> None:
    h = ToolHistory(calls=[call("c1"), call("c2")], results=[result("c1"), result("c2")])
    res = pair_tool_history(h)
    assert res.blocked is None and res.anomalies == ()
    assert [p.call_id for p in res.pairs] == ["c1", "c2"]
    dumped = res.pairs[0].model_dump(mode="json")
    assert set(dumped) >= {
        "call_id",
        "tool_name",
        "canonicalization",
        "canonical_argument_hash",
        "result_item_id",
        "result_hash",
        "status",
        "pairing_assertion",
        "evidence_use",
    }
    assert "call" not in dumped and "result" not in dumped
    assert dumped["canonicalization"] == CANONICALIZATION
    assert dumped["pairing_assertion"] == "exactly_one_result_for_call"
    assert dumped["evidence_use"] == "confirmed_by_policy"
    assert dumped["result_hash"] == sha256_text("output of c1")


def test_reordered_results_are_paired_to_their_calls() -> None:
    h = ToolHistory(
        calls=[call("repo-a", repo="A"), call("repo-b", repo="B")],
        results=[result("repo-b", "B says"), result("repo-a", "A says")],
    )
    res = pair_tool_history(h)
    assert [(p.call_id, p.result.content) for p in res.pairs] == [
        ("repo-a", "A says"),
        ("repo-b", "B says"),
    ]
    assert AnomalyType.TOOL_RESULT_REORDERED in types(res)
    assert all(a.call_id in {"repo-a", "repo-b"} for a in res.anomalies)


def test_missing_result_is_synthesized_placeholder() -> None:
    res = pair_tool_history(ToolHistory(calls=[call("c1"), call("c2")], results=[result("c1")]))
    assert types(res) == [AnomalyType.TOOL_RESULT_SYNTHESIZED]
    assert res.anomalies[0].call_id == "c2"
    pair = res.pairs[1]
    assert pair.synthesized and pair.status is ToolStatus.UNKNOWN
    assert pair.evidence_use == "unavailable"
    assert "unavailable" in pair.result.content.lower()
    assert "do not assume it succeeded" in pair.result.content
    assert res.unresolved_call_ids == ("c2",)


def test_orphan_result_is_dropped() -> None:
    res = pair_tool_history(
        ToolHistory(calls=[call("c1")], results=[result("ghost"), result("c1")])
    )
    assert types(res) == [AnomalyType.ORPHAN_TOOL_RESULT_DROPPED]
    assert res.anomalies[0].call_id == "ghost"
    assert [p.call_id for p in res.pairs] == ["c1"]


def test_duplicate_result_is_dropped_first_arrival_kept() -> None:
    res = pair_tool_history(
        ToolHistory(calls=[call("c1")], results=[result("c1", "first"), result("c1", "first")])
    )
    assert types(res) == [AnomalyType.DUPLICATE_DROPPED]
    assert res.pairs[0].result.content == "first"


def test_identical_repeated_call_record_is_duplicate_dropped() -> None:
    res = pair_tool_history(ToolHistory(calls=[call("c1"), call("c1")], results=[result("c1")]))
    assert types(res) == [AnomalyType.DUPLICATE_DROPPED]
    assert len(res.pairs) == 1


def test_two_different_calls_with_one_id_is_an_error() -> None:
    with pytest.raises(ToolHistoryError, match="c1"):
        pair_tool_history(ToolHistory(calls=[call("c1", repo="A"), call("c1", repo="B")]))


def test_same_arguments_different_ids_stay_separate_pairs() -> None:
    h = ToolHistory(
        calls=[call("c1", repo="A"), call("c2", repo="A")], results=[result("c1"), result("c2")]
    )
    pairs = pair_tool_history(h).pairs
    assert pairs[0].canonical_argument_hash == pairs[1].canonical_argument_hash
    assert len({p.call_id for p in pairs}) == 2


@pytest.mark.parametrize("status", [ToolStatus.PARTIAL, ToolStatus.ERROR])
def test_partial_and_error_are_diagnostic_unless_allowed(status: ToolStatus) -> None:
    h = ToolHistory(calls=[call("c1")], results=[result("c1", status=status)])
    assert pair_tool_history(h).pairs[0].evidence_use == "diagnostic_only"
    allowed = pair_tool_history(h, allow_partial_evidence=True)
    assert allowed.pairs[0].evidence_use == "confirmed_by_policy"


def test_canceled_is_diagnostic_and_unknown_unavailable() -> None:
    h = ToolHistory(
        calls=[call("c1"), call("c2")],
        results=[result("c1", status=ToolStatus.CANCELED), result("c2", status=ToolStatus.UNKNOWN)],
    )
    uses = [p.evidence_use for p in pair_tool_history(h, allow_partial_evidence=True).pairs]
    assert uses == ["diagnostic_only", "unavailable"]


def test_conflicting_duplicate_error_blocks() -> None:
    h = ToolHistory(
        calls=[call("c1")],
        results=[result("c1", "ok"), result("c1", "boom", status=ToolStatus.ERROR)],
    )
    res = pair_tool_history(h)
    assert res.blocked is not None and res.blocked.startswith("duplicate_conflict")
    assert res.pairs == ()


def test_conflicting_duplicate_with_security_marker_blocks() -> None:
    h = ToolHistory(
        calls=[call("c1")],
        results=[result("c1", "ok"), result("c1", "Permission denied for /etc/shadow")],
    )
    assert pair_tool_history(h).blocked is not None


def test_benign_conflicting_duplicate_keeps_first_and_records_it() -> None:
    h = ToolHistory(calls=[call("c1")], results=[result("c1", "v1"), result("c1", "v2")])
    res = pair_tool_history(h)
    assert res.blocked is None and res.pairs[0].result.content == "v1"
    assert "differed" in res.anomalies[0].detail


def test_security_relevant_orphan_blocks() -> None:
    flagged = result("ghost", "fine", security_flags=("secret_material",))
    assert pair_tool_history(ToolHistory(calls=[], results=[flagged])).blocked
    by_tool = result("ghost", "fine", tool="auth_check")
    res = pair_tool_history(ToolHistory(results=[by_tool]), security_relevant_tools=["auth_check"])
    assert res.blocked is not None and "orphan_security_relevant" in res.blocked


def test_result_hash_mismatch_blocks() -> None:
    bad = result("c1", "content", result_hash=sha256_text("other"))
    res = pair_tool_history(ToolHistory(calls=[call("c1")], results=[bad]))
    assert res.blocked is not None and res.blocked.startswith("result_hash_mismatch")
    good = result("c1", "content", result_hash=sha256_text("content"))
    assert pair_tool_history(ToolHistory(calls=[call("c1")], results=[good])).blocked is None


def test_tool_name_mismatch_blocks() -> None:
    res = pair_tool_history(
        ToolHistory(calls=[call("c1")], results=[result("c1", tool="write_file")])
    )
    assert res.blocked is not None and res.blocked.startswith("tool_name_mismatch")


def test_non_json_arguments_rejected() -> None:
    with pytest.raises(ValueError, match="c1"):
        ToolCall(call_id="c1", tool_name="t", arguments={"x": float("nan")}, turn=0)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=8),
    answered=st.data(),
)
def test_pairing_is_invariant_to_arrival_order(n: int, answered: st.DataObject) -> None:
    calls = [call(f"c{i}", turn=i // 3, repo=str(i)) for i in range(n)]
    mask = answered.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    results = [result(f"c{i}", f"out {i}") for i in range(n) if mask[i]]
    order = answered.draw(st.permutations(results))
    base = pair_tool_history(ToolHistory(calls=calls, results=results))
    shuffled = pair_tool_history(ToolHistory(calls=calls, results=order))
    assert base.pairs == shuffled.pairs
    assert [p.call_id for p in shuffled.pairs] == [c.call_id for c in calls]
    for p in shuffled.pairs:
        assert p.synthesized or p.result.content == f"out {p.call_id[1:]}"
