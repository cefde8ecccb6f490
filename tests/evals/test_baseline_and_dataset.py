"""The dump-all baseline and the bundled dataset, without the engine."""

from __future__ import annotations

from context.policy import load_policy
from context.seal.render import data_block
from context.tokens import count_tokens
from evals.context_lab.baseline import run_dump_all
from evals.context_lab.dataset import LabCase, LabSource, load_cases, load_sources
from evals.context_lab.mapping import source_to_item
from evals.context_lab.runner import BUNDLED_CASES, BUNDLED_SOURCES
from tests.evals.conftest import BASE_CASE, BASE_SOURCE


def _sources(n: int) -> dict[str, LabSource]:
    return {f"s{i}": LabSource.model_validate(dict(BASE_SOURCE, id=f"s{i}")) for i in range(n)}


def test_dump_all_stops_at_the_first_overflow_and_counts_engine_blocks():
    policy = load_policy("default")
    sources = _sources(3)
    block = count_tokens(data_block(source_to_item(sources["s0"], policy)))
    case = LabCase.model_validate(dict(BASE_CASE, candidate_source_ids=["s0", "s1", "s2"]))
    packet = run_dump_all(case, sources, budget=2 * block + 1, policy=policy)
    assert [s.id for s in packet.selected] == ["s0", "s1"]
    assert [s.tokens for s in packet.selected] == [block, block]
    assert packet.budget_used == 2 * block
    assert [(e.id, e.reason) for e in packet.excluded] == [("s2", "budget_evicted")]
    tiny = run_dump_all(case, sources, budget=block - 1, policy=policy)
    assert tiny.selected == () and len(tiny.excluded) == 3
    assert tiny.missing_topics == ("rate-limit",)


def test_dump_all_replays_tool_history_in_arrival_order():
    case = LabCase.model_validate(dict(BASE_CASE, candidate_source_ids=["s0"], tool_history=[
        {"type": "call", "call_id": "a", "tool_name": "read", "turn": 1},
        {"type": "call", "call_id": "b", "tool_name": "read", "turn": 1},
        {"type": "result", "call_id": "b", "tool_name": "read", "content": "B"},
        {"type": "result", "call_id": "a", "tool_name": "read", "content": "A"},
    ]))
    packet = run_dump_all(case, _sources(1), budget=1000, policy=load_policy("default"))
    assert [(e.kind, e.call_id) for e in packet.tool_events] == [
        ("call", "a"), ("call", "b"), ("result", "b"), ("result", "a")]


def test_engine_shaped_tool_history_is_accepted():
    case = LabCase.model_validate(dict(BASE_CASE, tool_history={
        "calls": [{"call_id": "a", "tool_name": "read", "turn": 1}],
        "results": [{"call_id": "a", "tool_name": "read", "content": "A"}]}))
    assert [e.type for e in case.tool_history] == ["call", "result"]


def test_bundled_dataset_covers_the_documented_failure_modes():
    sources = load_sources(BUNDLED_SOURCES)
    cases = load_cases(BUNDLED_CASES, sources)
    assert len(cases) >= 20
    reasons = {r.value for c in cases for r in c.expected_excluded.values()}
    assert {"expired", "superseded", "not_required", "permission_denied", "stale_revision",
            "hard_gate_rejected", "budget_evicted"} <= reasons
    assert any(c.expected_missing_topics for c in cases)
    assert any(c.forbidden_text for c in cases) and any(c.retained_text for c in cases)
    boundary = [c for c in cases for sid in c.candidate_source_ids
                if sources[sid].valid_until == c.as_of]
    assert boundary, "a source valid exactly until as_of"
    assert any(s.trust == "untrusted" for s in sources.values())
    assert any(s.sensitivity > c.clearance for c in cases
               for s in (sources[i] for i in c.candidate_source_ids))
    assert any(s.scope is not None for s in sources.values())
    histories = [c.tool_history for c in cases if c.tool_history]
    assert len(histories) >= 5
    anomalies = {a.type.value for c in cases for a in c.expected_anomalies}
    assert anomalies == {"tool_result_reordered", "tool_result_synthesized",
                         "orphan_tool_result_dropped", "duplicate_dropped"}
