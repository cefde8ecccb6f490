"""The research-log layout (context/tools/fold.py) and its preservation assertions.

Each assertion fails when the layout breaks it — a note citation lost, a call id in two
places or none, a cited result folded early — both in ``check_fold`` itself and through
``assemble``, which then blocks with ``transform_blocked`` instead of sending the request.
Pure engine tests over real tool histories; nothing is faked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from context import ContextAssemblyBlocked, Ready, assemble
from context.policy import ContextPolicy
from context.tool_history import ToolCall, ToolHistory, ToolResult
from context.tools import fold
from context.tools.pairing import pair_tool_history
from context.vocabulary import ToolStatus
from tests.context.builders import POLICY, request

REV = "f0ee4edd56fb4814cb15d4859098732e49b8cfc9"
#: the default policy with the research-log layout: the last turn verbatim, a fold every
#: 10 turns
FOLDED = ContextPolicy.model_validate({
    **POLICY.model_dump(mode="json"),
    "tool_pairs": {**POLICY.tool_pairs.model_dump(mode="json"), "fold_every": 10,
                   "keep_recent": 1}})


def cite(call_id: str, line: int) -> dict[str, Any]:
    return {"call_id": call_id, "source": "stdlib", "revision": REV, "path": "Lib/a.py",
            "start_line": line, "end_line": line}


def history(turns: int, *, failed_note_turn: int | None = None) -> ToolHistory:
    """``turns`` turns: odd turns read, even turns note what the turn before read."""
    calls, results = [], []
    for turn in range(1, turns + 1):
        cid = f"t{turn:04d}-1"
        if turn % 2:
            calls.append(ToolCall(call_id=cid, tool_name="read", turn=turn, arguments={
                "source": "stdlib", "path": "Lib/a.py", "start_line": turn,
                "end_line": turn + 2}))
            results.append(ToolResult(call_id=cid, tool_name="read",
                                      status=ToolStatus.SUCCESS,
                                      content=json.dumps({"lines": [f"line {turn}"]})))
        else:
            calls.append(ToolCall(call_id=cid, tool_name="note", turn=turn, arguments={
                "topic": "rate-limit", "claim": f"claim {turn}",
                "citations": [cite(f"t{turn - 1:04d}-1", turn - 1)]}))
            status = ToolStatus.ERROR if turn == failed_note_turn else ToolStatus.SUCCESS
            results.append(ToolResult(call_id=cid, tool_name="note", status=status,
                                      content=json.dumps({"accepted": status
                                                          is ToolStatus.SUCCESS})))
    return ToolHistory(calls=calls, results=results)


def built(h: ToolHistory) -> Ready:
    out = assemble(request(tool_history=h, policy=FOLDED))
    assert isinstance(out, Ready), getattr(out, "blocked_reason", None)
    return out


def test_the_layout_last_turn_verbatim_a_log_line_per_call_and_a_fold_every_k_turns() -> None:
    out = built(history(23))
    placement = {p.call_id: p.placement for p in out.manifest.tool_pairs}
    assert placement["t0023-1"] == "verbatim"
    assert {placement[f"t{n:04d}-1"] for n in range(1, 21)} == {"folded"}
    assert {placement[f"t{n:04d}-1"] for n in range(21, 23)} == {"logged"}
    ids = [i.item_id for i in out.manifest.included]
    # one fold block per ten turns, never rewritten once written
    assert "research-fold:t0001-1..t0010-1" in ids and "research-fold:t0011-1..t0020-1" in ids
    assert "research-log:t0021" in ids and "research-log:t0022" in ids
    text = out.serialized.canonical_json
    # every accepted note's citation, in full, and the call it cites
    # (a fold block states the commit once; a log line in full)
    assert text.count(f"Commits: stdlib@{REV}") == 2
    for turn in range(2, 21, 2):
        assert f"stdlib:Lib/a.py#L{turn - 1}-L{turn - 1} via t{turn - 1:04d}-1" in text
    assert f"stdlib@{REV}:Lib/a.py#L21-L21 via t0021-1" in text
    # the manifest records the fold like a compaction, with its assertions
    fold_rec = next(t for t in out.manifest.transforms
                    if t.output_item_id == "research-fold:t0011-1..t0020-1")
    assert fold_rec.preservation_assertions == {
        "note_citations_verbatim": "passed", "call_ids_exactly_once": "passed",
        "pending_citations_verbatim": "passed"}
    assert any(s.summary_id == fold_rec.output_item_id for s in out.manifest.summaries)


def test_explain_shows_the_zone_each_item_and_exchange_sat_in() -> None:
    """``pressroom explain --turn N`` lists the request's zones in order: the stable
    prefix, the fold with its calls, each log block with the calls it lists, the other
    data, and the verbatim turn."""
    from presentation.explain import layout_lines

    lines = layout_lines(built(history(23)).manifest.model_dump(mode="json"))
    assert lines[0] == "layout (request order):"
    assert lines[1] == "  stable prefix: policy-system, step:research, job-spec"
    assert lines[2] == ("  fold: research-fold:t0001-1..t0010-1, "
                        "research-fold:t0011-1..t0020-1 (20 calls)")
    assert lines[3] == ("  log: research-log:t0021 (t0021-1), "
                        "research-log:t0022 (t0022-1)")
    assert lines[-1] == "  verbatim: t0023-1 (1 calls)"
    assert not any(line.startswith("  history summary") for line in lines)


def test_between_folds_the_request_only_grows_at_its_tail() -> None:
    """Turn 24's request starts with turn 23's up to the last log block: the fold and the
    log lines already sent are byte-identical; a new fold comes only at turn 31."""
    before = built(history(23)).serialized.payload["messages"]
    after = built(history(24)).serialized.payload["messages"]
    logs = [i for i, m in enumerate(before) if "research-log:" in str(m.get("content"))]
    assert logs and before[:logs[-1] + 1] == after[:logs[-1] + 1]
    assert "research-fold:t0011-1..t0020-1" in str(built(history(30)).serialized.payload)
    # at the next boundary the earlier fold blocks stay byte-identical: a third is added
    at30 = built(history(30)).serialized.payload["messages"]
    at31 = built(history(31)).serialized.payload["messages"]
    folds = [i for i, m in enumerate(at30) if "research-fold:" in str(m.get("content"))]
    assert len(folds) == 2 and at30[:folds[-1] + 1] == at31[:folds[-1] + 1]
    assert "research-fold:t0021-1..t0030-1" in str(at31[folds[-1] + 1].get("content"))


def test_a_result_a_pending_note_cites_stays_verbatim() -> None:
    out = built(history(23, failed_note_turn=4))  # the note of turn 4 was refused
    placement = {p.call_id: p.placement for p in out.manifest.tool_pairs}
    assert placement["t0003-1"] == "verbatim"  # its cited read, though 20 turns old
    assert placement["t0004-1"] == "folded"


def pairs_and_plan(turns: int = 23, **kw: Any) -> tuple[Any, fold.FoldPlan, dict[int, str],
                                                         str | None]:
    pairs = pair_tool_history(history(turns, **kw)).pairs
    plan = fold.plan_fold(pairs, 1, 10)
    logs: dict[int, list[str]] = {}
    for p in plan.logged:
        logs.setdefault(p.turn, []).append(fold.log_line(p))
    return pairs, plan, {t: "\n".join(v) for t, v in logs.items()}, fold.fold_text(plan.folded)


def test_check_fold_passes_the_layout_as_built() -> None:
    pairs, plan, logs, text = pairs_and_plan()
    assert set(fold.check_fold(pairs, plan.verbatim, logs, text).values()) == {"passed"}


def test_a_lost_note_citation_fails_its_assertion() -> None:
    pairs, plan, logs, text = pairs_and_plan()
    assert text is not None
    lost = text.replace("stdlib:Lib/a.py#L3-L3 via t0003-1", "stdlib:Lib/a.py")
    checks = fold.check_fold(pairs, plan.verbatim, logs, lost)
    assert checks["note_citations_verbatim"] == "failed"
    assert checks["call_ids_exactly_once"] == "passed"
    # a short citation is complete only with its block's commit line
    no_commit = text.replace(f"Commits: stdlib@{REV}", "Commits: stdlib@0000")
    assert fold.check_fold(pairs, plan.verbatim, logs, no_commit)[
        "note_citations_verbatim"] == "failed"


def test_a_call_id_in_two_places_or_none_fails_its_assertion() -> None:
    pairs, plan, logs, text = pairs_and_plan()
    twice = {**logs, 21: logs[21] + "\n" + logs[22]}  # turn 22's line also under 21
    assert fold.check_fold(pairs, plan.verbatim, twice, text)[
        "call_ids_exactly_once"] == "failed"
    assert fold.check_fold(pairs, (*plan.verbatim, "t0022-1"), logs, text)[
        "call_ids_exactly_once"] == "failed"
    none = {t: v for t, v in logs.items() if t != 21}
    assert fold.check_fold(pairs, plan.verbatim, none, text)[
        "call_ids_exactly_once"] == "failed"
    assert text is not None
    short = text.replace("t0001-1, ", "")  # a folded range that skips a call
    assert fold.check_fold(pairs, plan.verbatim, logs, short)[
        "call_ids_exactly_once"] == "failed"


def test_a_cited_result_folded_early_fails_its_assertion() -> None:
    pairs, plan, logs, text = pairs_and_plan(failed_note_turn=4)
    assert "t0003-1" in plan.verbatim
    early = tuple(c for c in plan.verbatim if c != "t0003-1")
    checks = fold.check_fold(pairs, early, logs, text)
    assert checks["pending_citations_verbatim"] == "failed"


@pytest.mark.parametrize("breakage", ["citation", "range", "pending"])
def test_the_engine_blocks_rather_than_send_a_layout_that_loses_something(
        monkeypatch: pytest.MonkeyPatch, breakage: str) -> None:
    real_text, real_plan = fold.fold_text, fold.plan_fold
    if breakage == "citation":
        monkeypatch.setattr(fold, "fold_text", lambda folded: real_text(folded).replace(
            " via t0005-1", ""))
    elif breakage == "range":
        monkeypatch.setattr(fold, "fold_text", lambda folded: real_text(folded).replace(
            "t0001-1, ", ""))
    else:
        def early(pairs: Any, keep: int, every: int) -> fold.FoldPlan:
            plan = real_plan(pairs, keep, every)
            moved = [p for p in pairs if p.call_id == "t0003-1"]
            return fold.FoldPlan(
                verbatim=tuple(c for c in plan.verbatim if c != "t0003-1"),
                logged=plan.logged, folded=tuple(sorted(
                    (*plan.folded, *moved), key=lambda p: p.call_id)),
                boundary=plan.boundary, pending_cited=plan.pending_cited)
        monkeypatch.setattr(fold, "plan_fold", early)
        import context.tools.stage as stage
        monkeypatch.setattr(stage, "plan_fold", early)
    out = assemble(request(tool_history=history(23, failed_note_turn=4), policy=FOLDED))
    assert isinstance(out, ContextAssemblyBlocked)
    assert out.blocked_reason == "transform_blocked"
    failed = [t for t in out.manifest.transforms
              if t.transformer_version == fold.FOLD_VERSION
              and "failed" in t.preservation_assertions.values()]
    assert failed, out.manifest.transforms


def test_a_log_the_budget_cannot_hold_blocks_instead_of_being_dropped() -> None:
    """The log and its fold are the only place older calls and notes are stated: when the
    tool-history budget cannot hold them the assembly blocks (naming the block), it never
    sends a request that silently lost them."""
    from context.request import ModelSpec

    small = ContextPolicy.model_validate({
        **FOLDED.model_dump(mode="json"),
        "budget": {**FOLDED.budget.model_dump(mode="json"), "partitions": {
            **FOLDED.budget.model_dump(mode="json")["partitions"],
            "recent_tool_pairs": {"minimum": 64, "maximum": 300,
                                  "eviction": "complete_pair_only"}}}})
    out = assemble(request(tool_history=history(60), policy=small,
                           model=ModelSpec(provider="openai", name="gpt-test",
                                           context_limit=32_000)))
    assert isinstance(out, ContextAssemblyBlocked)
    assert out.manifest.blocked_reason == "required_evidence_missing"
    assert "research-" in (out.manifest.blocked_detail or "")


def test_the_second_cache_breakpoint_sits_on_the_newest_log_block() -> None:
    """Anthropic: ``cache_control`` on the stable prefix and on the newest log block, so
    the next turn (one log block more) reads everything up to it from the cache."""
    out = assemble(request(tool_history=history(23), policy=FOLDED,
                           adapter="anthropic_messages"))
    assert isinstance(out, Ready)
    marked = [str(block.get("text", ""))[:60] for m in out.serialized.payload["messages"]
              if isinstance(m["content"], list) for block in m["content"]
              if "cache_control" in block]
    assert len(marked) == 1 and 'id="research-log:t0022"' in marked[0], marked
