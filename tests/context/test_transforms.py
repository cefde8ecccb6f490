"""Transforms: boundary-only truncation and the extractive summary's preservation checks."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context.items import ContextItem, SourceRef
from context.tokens import TokenCounter
from context.tool_history import ToolCall, ToolHistory, ToolPair, ToolResult
from context.tools.pairing import pair_tool_history
from context.tools.transforms import (
    PRESERVE_KEYS,
    PreservationFailed,
    TransformError,
    structured_summary,
    truncate_items,
)
from context.vocabulary import TRUST_RANK, Role, SourceType, ToolStatus, Trust
from tests.context.helpers_support import code_item, history, item, web_item

STATE_FACTS: dict[str, Any] = {
    "goal": "Publish a verified article on pi's context pipeline",
    "constraints": ["human approval before publish", "cite repo@commit:path#Lx-Ly"],
    "current_stage": "drafting",
    "done": ["research plan r5 approved"],
    "in_progress": ["draft section 2"],
    "blocked": ["review waits for evidence pack r3"],
    "open_items": ["release date of v2 unknown", "license of repo B unverified"],
    "exact_values": ["max_tokens=8192"],
    "errors": ["TypeError: convertToLlm is not a function (types.ts:171)"],
    "conflicts": ["blog says 2025-03-01, changelog says 2025-03-04"],
    "negative_findings": [{"finding": "no retry logic found", "scope": "pi@53fa77c src/"}],
    "draft_revision": "2",
    "next_steps": ["compare with continue's constructMessages"],
    "artifact_refs": ["evidence_pack:evidence-42@3"],
    "checkpoint_ref": "checkpoint-19",
}


def state_item(**meta: Any) -> ContextItem:
    return item(
        "state-19",
        "runtime state at turn 19",
        source_type=SourceType.RUNTIME_STATE,
        trust=Trust.TRUSTED_STATE,
        intended_role=Role.STATE,
        metadata={**STATE_FACTS, **meta},
    )


def pending_pairs() -> tuple[ToolPair, ...]:
    h = history()
    h = ToolHistory(
        calls=(*h.calls, ToolCall(call_id="call_pending", tool_name="grep", arguments={}, turn=3)),
        results=h.results,
    )
    return pair_tool_history(h).pairs


def summarize(items: list[ContextItem], **kw: Any) -> tuple[ContextItem, Any]:
    kw.setdefault("tool_pairs", pending_pairs())
    return structured_summary(
        items, objective="restore_current_research_state", policy_version="default/1", **kw
    )


def test_summary_keeps_every_required_fact() -> None:
    claim = code_item().model_copy(update={"claim": "transformContext is separate"})
    out, rec = summarize([state_item(), claim, web_item()])
    text = out.content
    for needle in [
        STATE_FACTS["goal"],
        *STATE_FACTS["constraints"],
        *STATE_FACTS["open_items"],
        "pi@53fa77c:packages/agent/src/types.ts#L149-L200",
        "transformContext is separate",
        "TypeError: convertToLlm is not a function (types.ts:171)",
        "call_grep grep error: grep: timeout after 30s",
        "no retry logic found (searched: pi@53fa77c src/)",
        "blog says 2025-03-01, changelog says 2025-03-04",
        "call_pending",
        "evidence_pack:evidence-42@3",
        "checkpoint: checkpoint-19",
        "tool-result:call_repoA",
    ]:
        assert needle in text, needle
    assert "## Draft Revision\n2" in text
    assert rec.passed and set(rec.preservation_assertions) == set(PRESERVE_KEYS)
    assert rec.type == "summarize" and rec.output_item_id == out.item_id
    assert rec.output_digest == out.content_hash
    assert rec.input_item_ids == ("state-19", "evidence-pi-types", "web-blog")
    assert rec.input_range == {"start_item_id": "state-19", "end_item_id": "web-blog"}
    assert rec.trust_before == "mixed_admitted_sources"
    assert out.source_lineage[-1].input_node_ids == rec.input_item_ids


def test_sections_are_in_seed_order() -> None:
    claim = code_item().model_copy(update={"claim": "transformContext is separate"})
    text = summarize([state_item(), claim, web_item()])[0].content
    titles = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert titles == [
        "Goal",
        "Constraints",
        "Current Stage",
        "Done / In Progress / Blocked",
        "Confirmed Claims + source refs",
        "Exact Values and Errors",
        "Conflicts and Negative Findings",
        "Open Items",
        "Draft Revision",
        "Next Steps",
        "Artifact / Checkpoint Refs",
        "Unresolved Tool Calls",
    ]


def test_a_section_with_nothing_recorded_is_left_out() -> None:
    """A loop's summary is resent every turn: a section with nothing in it is not written
    as "(none recorded)", and the sections that are written keep the seed order."""
    text = summarize([code_item()], tool_pairs=())[0].content
    titles = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert "(none recorded)" not in text
    assert titles == ["Confirmed Claims + source refs"], titles
    assert "Goal" not in titles and "Unresolved Tool Calls" not in titles


def test_summary_is_deterministic() -> None:
    a = summarize([state_item(), code_item()])
    b = summarize([state_item(), code_item()])
    assert a[0] == b[0] and a[1] == b[1]


@pytest.mark.parametrize(
    ("trusts", "expected"),
    [
        ([Trust.TRUSTED_STATE], Trust.DERIVED_CONTEXT),
        ([Trust.CONTROL_AUTHORITY, Trust.TASK_AUTHORITY], Trust.DERIVED_CONTEXT),
        ([Trust.REPOSITORY_EVIDENCE, Trust.PROJECT_EDITABLE], Trust.PROJECT_EDITABLE),
        ([Trust.UNTRUSTED_EXTERNAL_DATA], Trust.UNTRUSTED_EXTERNAL_DATA),
    ],
)
def test_trust_never_rises(trusts: list[Trust], expected: Trust) -> None:
    items = [item(f"i{n}", f"text {n}", trust=t) for n, t in enumerate(trusts)]
    out, rec = summarize(items, tool_pairs=())
    assert out.trust is expected and rec.trust_after == expected.value
    assert all(TRUST_RANK[out.trust] <= TRUST_RANK[t] for t in trusts)
    assert out.intended_role in (Role.DERIVED_CONTEXT, Role.UNTRUSTED_DATA)


def test_summary_over_tool_output_never_outranks_it() -> None:
    """Tool results are untrusted data: a summary of them (even together with trusted
    state) must not come out as derived context, above the output it summarizes."""
    pairs = pending_pairs()
    assert any(not p.synthesized for p in pairs)
    out, rec = summarize([state_item()], tool_pairs=pairs)
    assert out.trust is Trust.UNTRUSTED_EXTERNAL_DATA
    assert rec.trust_after == Trust.UNTRUSTED_EXTERNAL_DATA.value
    assert out.intended_role is Role.UNTRUSTED_DATA
    assert rec.trust_before == "mixed_admitted_sources"
    # without tool pairs the same item summarizes to derived context
    alone, _ = summarize([state_item()], tool_pairs=())
    assert alone.trust is Trust.DERIVED_CONTEXT


def test_fresh_empty_counter_is_used_not_replaced() -> None:
    """An empty TokenCounter is falsy (it has ``__len__``); the transforms must still use
    the caller's counter rather than the shared default one."""
    counter = TokenCounter()
    assert len(counter) == 0
    summarize([state_item()], counter=counter)
    assert counter.misses > 0 and len(counter) > 0
    fresh = TokenCounter()
    truncate_items([state_item()], max_tokens=10_000, objective="fit",
                   policy_version="default/1", counter=fresh)
    assert fresh.misses > 0


def test_clipped_exact_error_fails_and_blocks() -> None:
    long_error = "Traceback: " + "frame " * 80 + "ValueError: bad commit 53fa77c"
    with pytest.raises(PreservationFailed) as err:
        summarize([state_item(errors=[long_error])], max_line_chars=120)
    rec = err.value.record
    assert rec.preservation_assertions["exact_values_and_errors"] == "failed"
    assert rec.preservation_assertions["goal"] == "passed"
    assert not rec.passed and "exact_values_and_errors" in str(err.value)


def test_token_target_drops_optional_lines_first() -> None:
    counter = TokenCounter()
    state = state_item(next_steps=["re-read the changelog of every release " * 5])
    full, _ = summarize([state], counter=counter)
    target = counter.count_text(full.content) - 3
    out, rec = summarize([state], max_tokens=target, counter=counter)
    assert "(omitted for budget)" in out.content and rec.passed
    assert rec.preservation_assertions["within_token_target"] == "passed"
    with pytest.raises(PreservationFailed) as err:
        summarize([state_item()], max_tokens=50, counter=counter)
    assert err.value.record.preservation_assertions["within_token_target"] == "failed"


def test_summary_of_summary_keeps_facts() -> None:
    first, _ = summarize([state_item(), code_item()])
    second, rec = summarize([first], tool_pairs=())
    for needle in [
        "call_pending",
        "pi@53fa77c:packages/agent/src/types.ts#L149-L200",
        STATE_FACTS["open_items"][1],
        "checkpoint: checkpoint-19",
    ]:
        assert needle in second.content
    assert rec.passed


def test_checkpoint_json_content_is_read() -> None:
    ckpt = item(
        "ckpt",
        '{"goal": "ship it", "open_items": ["verify license"]}',
        source_type=SourceType.CHECKPOINT,
        trust=Trust.TRUSTED_STATE,
        intended_role=Role.STATE,
        source_ref=SourceRef(artifact_kind="checkpoint", artifact_id="ckpt-7", revision="7"),
    )
    out, _ = summarize([ckpt], tool_pairs=())
    assert "- ship it" in out.content and "- verify license" in out.content
    assert "checkpoint:ckpt-7@7" in out.content


def test_draft_revision_from_artifact_ref() -> None:
    draft = item(
        "draft",
        "text",
        source_ref=SourceRef(artifact_kind="article_draft", artifact_id="draft-42", revision="4"),
    )
    out, _ = summarize([draft], tool_pairs=())
    assert "## Draft Revision\n4" in out.content


def test_bad_inputs_are_typed_errors() -> None:
    with pytest.raises(TransformError):
        summarize([])
    with pytest.raises(TransformError, match="unknown preservation"):
        summarize([state_item()], preserve=["gaol"])
    other = item("o", "x", scope={"tenant": "acme", "project": "pressroom", "task": "t2"})
    with pytest.raises(TransformError, match="different tasks"):
        summarize([state_item(), other])
    with pytest.raises(TransformError):
        truncate_items([code_item()], max_tokens=-1, objective="o", policy_version="p")


def turn_item(n: int, turn: int | None, size: int = 20) -> ContextItem:
    meta = {"turn": turn} if turn is not None else {}
    return item(f"h{n}", f"message {n} " + "word " * size, metadata=meta)


def test_truncation_keeps_newest_whole_turns() -> None:
    items = [turn_item(0, 1), turn_item(1, 1), turn_item(2, 2), turn_item(3, None)]
    counter = TokenCounter()
    cost = counter.count_text(items[0].content)
    res = truncate_items(
        items,
        max_tokens=cost * 2 + 1,
        objective="fit history",
        policy_version="default/1",
        counter=counter,
    )
    assert [i.item_id for i in res.kept_items] == ["h2", "h3"]
    assert res.dropped_item_ids == ("h0", "h1")
    assert res.record.type == "truncate_item" and res.record.passed
    assert res.record.dropped_item_ids == ("h0", "h1")
    assert res.record.token_estimate_after <= cost * 2 + 1


def test_truncation_never_splits_parallel_calls() -> None:
    pairs = pair_tool_history(history()).pairs  # turn 1: repoA + repoB, turn 2: grep
    counter = TokenCounter()
    one_pair = counter.count_text(pairs[0].result.content) + 20
    res = truncate_items(
        [],
        tool_pairs=pairs,
        max_tokens=one_pair,
        objective="o",
        policy_version="p",
        counter=counter,
    )
    assert [p.call_id for p in res.kept_pairs] == ["call_grep"]
    assert res.dropped_call_ids == ("call_repoA", "call_repoB")


def test_truncation_keeps_unresolved_and_pinned() -> None:
    pairs = pending_pairs()
    counter = TokenCounter()
    pinned_cost = (
        counter.count_text(turn_item(0, None).content)
        + counter.count_text(pairs[-1].result.content)
        + counter.count_text("{}")
    )
    res = truncate_items(
        [turn_item(0, None)],
        tool_pairs=pairs,
        max_tokens=pinned_cost,
        objective="o",
        policy_version="p",
        pinned_item_ids=["h0"],
        counter=counter,
    )
    assert [p.call_id for p in res.kept_pairs] == ["call_pending"]
    assert [i.item_id for i in res.kept_items] == ["h0"]
    assert res.record.passed and res.record.token_estimate_after == pinned_cost


def test_pinned_over_budget_blocks() -> None:
    big = turn_item(0, None, size=200)
    with pytest.raises(PreservationFailed) as err:
        truncate_items(
            [big], max_tokens=10, objective="o", policy_version="p", pinned_item_ids=["h0"]
        )
    assert err.value.record.preservation_assertions["within_budget"] == "failed"


@settings(max_examples=80, deadline=None)
@given(
    turns=st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=12),
    items_turns=st.lists(st.one_of(st.none(), st.integers(0, 5)), max_size=8),
    budget=st.integers(min_value=0, max_value=400),
    keep=st.sampled_from(["newest", "oldest"]),
)
def test_no_tool_exchange_or_turn_is_ever_cut(
    turns: list[int], items_turns: list[int | None], budget: int,
    keep: Literal["newest", "oldest"],
) -> None:
    turns = sorted(turns)
    calls = [
        ToolCall(call_id=f"c{i}", tool_name="t", arguments={"i": i}, turn=t)
        for i, t in enumerate(turns)
    ]
    results = [
        ToolResult(
            call_id=f"c{i}", tool_name="t", status=ToolStatus.SUCCESS, content="out " * (i + 1)
        )
        for i in range(len(turns))
        if i % 4
    ]
    pairs = pair_tool_history(ToolHistory(calls=calls, results=results)).pairs
    items = [turn_item(n, t, size=n) for n, t in enumerate(items_turns)]
    try:
        res = truncate_items(
            items, tool_pairs=pairs, max_tokens=budget, objective="o", policy_version="p", keep=keep
        )
    except PreservationFailed as exc:
        # only the budget may fail (pinned unresolved calls); structure never does
        assert exc.record.failed_assertions == ("within_budget",)
        return
    kept_calls = {p.call_id for p in res.kept_pairs}
    kept_ids = {i.item_id for i in res.kept_items}
    for t in set(turns) | {t for t in items_turns if t is not None}:
        members = [p.call_id in kept_calls for p in pairs if p.turn == t]
        members += [i.item_id in kept_ids for i in items if i.metadata.get("turn") == t]
        assert len(set(members)) <= 1, f"turn {t} split"
    assert all(p.call_id in kept_calls for p in pairs if p.synthesized)
    assert res.record.token_estimate_after <= budget
