"""Partition budgets: usable formula, minimums, maximums, borrowing, whole-unit eviction."""

from __future__ import annotations

from context import ContextAssemblyBlocked, Ready, assemble, count_tokens, policy_from_mapping
from context.budget.allocation import Unit, allocate, usable_budget
from context.policy import BudgetPolicy
from context.seal.render import parse_data_blocks
from context.vocabulary import BlockedReason, Partition
from tests.context.builders import POLICY, item, request


def _budget(**parts: dict[str, object]) -> BudgetPolicy:
    base: dict[str, dict[str, object]] = {
        p.value: {"minimum": 0, "eviction": "reduce_candidates"} for p in Partition
    }
    base.update(parts)
    return BudgetPolicy.model_validate(
        {"response_reserve": 0, "protocol_overhead": 0, "safety_margin": 0, "partitions": base}
    )


def test_usable_input_formula() -> None:
    b = POLICY.budget
    assert usable_budget(b, 32_000) == 32_000 - b.response_reserve - b.protocol_overhead \
        - b.safety_margin


def test_minimums_that_do_not_fit_block() -> None:
    b = _budget(control={"minimum": 60, "eviction": "never"},
                task={"minimum": 60, "eviction": "never"})
    alloc = allocate([Unit("c", Partition.CONTROL, 10, 0)], b, 100)
    assert alloc.blocked is BlockedReason.MINIMUMS_EXCEED_BUDGET


def test_borrowing_never_eats_another_partitions_needed_minimum() -> None:
    b = _budget(direct_evidence={"minimum": 40, "eviction": "reduce_candidates"},
                background={"minimum": 0, "eviction": "first"})
    units = [Unit(f"bg{i}", Partition.BACKGROUND, 20, i) for i in range(5)]
    units += [Unit("ev", Partition.DIRECT_EVIDENCE, 40, 0)]
    alloc = allocate(units, b, 100)
    admitted = {u.unit_id for u in alloc.admitted}
    assert "ev" in admitted
    assert alloc.partitions[Partition.BACKGROUND].used == 60  # 100 - 40 reserved
    assert alloc.used <= 100


def test_unused_minimum_is_lent_out() -> None:
    b = _budget(state={"minimum": 50, "eviction": "structured_summary"})
    units = [Unit(f"ev{i}", Partition.DIRECT_EVIDENCE, 30, i) for i in range(3)]
    alloc = allocate(units, b, 100)
    assert len(alloc.admitted) == 3  # state needs nothing, its 50 are borrowed


def test_maximum_caps_a_partition() -> None:
    b = _budget(background={"minimum": 0, "maximum": 25, "eviction": "first"})
    units = [Unit(f"bg{i}", Partition.BACKGROUND, 10, i) for i in range(5)]
    alloc = allocate(units, b, 1000)
    assert alloc.partitions[Partition.BACKGROUND].used == 20
    assert [u.unit_id for u in alloc.evicted] == ["bg2", "bg3", "bg4"]


def test_tool_pairs_keep_a_contiguous_recent_tail() -> None:
    b = _budget(recent_tool_pairs={"minimum": 0, "maximum": 35,
                                   "eviction": "complete_pair_only"})
    units = [Unit("new", Partition.RECENT_TOOL_PAIRS, 20, 0),
             Unit("mid", Partition.RECENT_TOOL_PAIRS, 30, 1),
             Unit("old", Partition.RECENT_TOOL_PAIRS, 5, 2)]
    alloc = allocate(units, b, 1000)
    assert [u.unit_id for u in alloc.admitted] == ["new"]  # "old" would fit, but not skipped


def test_never_partition_overflow_blocks() -> None:
    b = _budget(control={"minimum": 0, "eviction": "never"})
    alloc = allocate([Unit("huge", Partition.CONTROL, 500, 0)], b, 100)
    assert alloc.blocked is BlockedReason.REQUIRED_PARTITION_MISSING


def test_required_unit_evicted_blocks() -> None:
    b = _budget()
    alloc = allocate([Unit("must", Partition.DIRECT_EVIDENCE, 500, 0, required=True)], b, 100)
    assert alloc.blocked is BlockedReason.REQUIRED_EVIDENCE_MISSING


def test_item_that_does_not_fit_is_budget_evicted_never_truncated() -> None:
    small = item("small", "HTTP 429: back off.")
    big = item("big", "HTTP 429 " + "lorem ipsum dolor " * 400)
    out = assemble(request([small, big], evidence_budget=80))
    assert isinstance(out, Ready)
    ex = {e.item_id: e for e in out.manifest.excluded}
    assert ex["big"].reason == "budget_evicted" and ex["big"].stage == "budget"
    views = parse_data_blocks(out.rendered_evidence)
    assert [v.item_id for v in views] == ["small"]
    assert views[0].content == small.content  # whole, never cut


def test_evidence_budget_counts_each_rendered_block() -> None:
    items_ = [item(f"d{i}", f"HTTP 429 note number {i}: " + "wait " * (10 * i + 5))
              for i in range(6)]
    for budget in (60, 150, 400):
        out = assemble(request(items_, evidence_budget=budget))
        assert isinstance(out, Ready)
        views = parse_data_blocks(out.rendered_evidence)
        blocks = [b for b in out.rendered_evidence.split("\n\n") if b.startswith("<<<DATA")]
        used = sum(count_tokens(b) for b in blocks)
        assert used <= budget
        assert out.manifest.budget.evidence_block_tokens == used
        assert len(views) == len(blocks)


def test_exact_request_count_never_exceeds_usable() -> None:
    items_ = [item(f"d{i}", "HTTP 429 " + "word " * 300) for i in range(40)]
    policy = policy_from_mapping({**POLICY.model_dump(mode="json"),
                                  "budget": {**POLICY.budget.model_dump(mode="json"),
                                             "response_reserve": 500, "protocol_overhead": 0,
                                             "safety_margin": 0}})
    from context import ModelSpec

    out = assemble(request(items_, policy=policy,
                           model=ModelSpec(provider="openai", name="m", context_limit=4000)))
    assert isinstance(out, Ready)
    from context.seal.adapters import get_adapter

    exact = get_adapter("openai_chat").count_tokens(out.serialized.payload)
    assert exact == out.manifest.budget.estimated_used
    assert exact <= out.manifest.budget.usable_input == 3500
    assert sum(p.used for p in out.manifest.budget.partitions.values()) == exact
    assert any(e.reason == "budget_evicted" for e in out.manifest.excluded)


def test_model_too_small_for_minimums_blocks() -> None:
    from context import ModelSpec

    out = assemble(request([item("d", "HTTP 429")],
                           model=ModelSpec(provider="openai", name="m", context_limit=5000)))
    assert isinstance(out, ContextAssemblyBlocked)
    assert out.blocked_reason is BlockedReason.MINIMUMS_EXCEED_BUDGET
