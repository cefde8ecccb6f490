"""The dump-all baseline and the bundled dataset, without the engine."""

from __future__ import annotations

import re
from collections import Counter

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


def test_dump_all_stops_at_the_first_overflow_and_counts_engine_blocks() -> None:
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


def test_dump_all_replays_tool_history_in_arrival_order() -> None:
    case = LabCase.model_validate(dict(BASE_CASE, candidate_source_ids=["s0"], tool_history=[
        {"type": "call", "call_id": "a", "tool_name": "read", "turn": 1},
        {"type": "call", "call_id": "b", "tool_name": "read", "turn": 1},
        {"type": "result", "call_id": "b", "tool_name": "read", "content": "B"},
        {"type": "result", "call_id": "a", "tool_name": "read", "content": "A"},
    ]))
    packet = run_dump_all(case, _sources(1), budget=1000, policy=load_policy("default"))
    assert [(e.kind, e.call_id) for e in packet.tool_events] == [
        ("call", "a"), ("call", "b"), ("result", "b"), ("result", "a")]


def test_engine_shaped_tool_history_is_accepted() -> None:
    case = LabCase.model_validate(dict(BASE_CASE, tool_history={
        "calls": [{"call_id": "a", "tool_name": "read", "turn": 1}],
        "results": [{"call_id": "a", "tool_name": "read", "content": "A"}]}))
    assert [e.type for e in case.tool_history] == ["call", "result"]


def test_bundled_dataset_covers_the_documented_failure_modes() -> None:
    sources = load_sources(BUNDLED_SOURCES)
    cases = load_cases(BUNDLED_CASES, sources)
    assert len(cases) >= 40
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
                         "orphan_tool_result_dropped", "duplicate_dropped", "tool_call_failed"}


def _blocks(source: LabSource) -> int:
    return count_tokens(data_block(source_to_item(source, load_policy("default"))))


def test_bundled_dataset_covers_the_harder_kinds_of_issue_14() -> None:
    """Multi-topic cases under tight budgets, three-revision supersession chains, parallel
    tool calls with a missing result, Chinese and mixed-language sources, secrets inside
    relevant sources (unquoted ``KEY=value``, URL passwords, keys cut mid-block), and the
    topics that genuinely need a label."""
    sources = load_sources(BUNDLED_SOURCES)
    cases = load_cases(BUNDLED_CASES, sources)
    by_id = {c.id: c for c in cases}

    def candidates(case: LabCase) -> list[LabSource]:
        return [sources[s] for s in case.candidate_source_ids]

    tight = [c for c in cases if len(c.required_topics) >= 2
             and c.budget < sum(_blocks(s) for s in candidates(c))
             and "budget_evicted" in {r.value for r in c.expected_excluded.values()}]
    assert len(tight) >= 3, [c.id for c in tight]
    chains = [c for c in cases if any(n >= 3 for n in Counter(
        s.key for s in candidates(c) if s.revision is not None).values())]
    assert len(chains) >= 3 and any(c.required_revisions for c in chains)
    parallel = [c for c in cases if any(n >= 2 for n in Counter(
        e.turn for e in c.tool_history if e.type == "call").values())]
    missing = [c for c in parallel
               if any(a.type.value == "tool_result_synthesized" for a in c.expected_anomalies)]
    assert len(parallel) >= 3 and missing

    def cjk(text: str) -> bool:
        return any("\u4e00" <= ch <= "\u9fff" for ch in text)

    chinese = [c for c in cases if cjk(c.question) or any(cjk(s.content) for s in candidates(c))]
    mixed = [s for s in sources.values() if cjk(s.content) and re.search(r"[A-Za-z]{4,}",
                                                                           s.content)]
    assert len(chinese) >= 5 and len(mixed) >= 2
    assert any(cjk(t) for c in cases for t in c.required_topics)  # a topic named in Chinese

    def secret_cases(pattern: str) -> list[str]:
        found = []
        for c in cases:
            for s in candidates(c):
                for m in re.finditer(pattern, s.content, re.MULTILINE):
                    if any(m.group("secret") in t or t in m.group("secret")
                           for t in c.forbidden_text):
                        found.append(c.id)
        return found

    assert secret_cases(r"^[A-Z][A-Z0-9_]*=(?P<secret>\S+)$")  # unquoted KEY=value
    assert secret_cases(r"://[^:/\s]+:(?P<secret>[^@\s]+)@")  # a URL with a password
    cut = [c.id for c in cases for s in candidates(c)
           if ("BEGIN" in s.content) != ("END" in s.content) and "PRIVATE KEY" in s.content
           and c.forbidden_text]
    assert len(cut) >= 2  # a key cut after its BEGIN line, and one cut before its END line
    # a secret under a Chinese key ("管理员密码" followed by a full-width colon)
    assert secret_cases("密码\uff1a(?P<secret>\\S+)$")
    needs = [(c.id, t) for c in cases for t in c.needs_label]
    assert needs and all(why.strip() for c in cases for why in c.needs_label.values())
    assert all(by_id[cid].topic_terms or by_id[cid].needs_label for cid in (
        "ctx-01-current-policy", "ctx-06-injection-skip-approval",
        "ctx-21-refresh-required-by-age", "ctx-23-editable-plan-as-data"))
