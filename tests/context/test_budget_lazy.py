"""Lazy costing: the budget evicts on proven lower bounds and allocates exactly as if every
unit had been tokenized up front."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from context import Ready, assemble, count_tokens
from context.budget.allocation import Unit, allocate
from context.policy import BudgetPolicy
from context.seal.render import parse_data_blocks
from context.tokens import TokenCounter
from context.vocabulary import BlockedReason, ExclusionReason, Partition
from tests.context.builders import item, request

_EVICTIONS = ["reduce_candidates", "first", "structured_summary", "complete_pair_only"]


class _Priced:
    """A Costing over hidden exact costs whose floors are arbitrary valid lower bounds."""

    def __init__(self, exact: dict[str, tuple[int, int]], floors: dict[str, float]) -> None:
        self.exact, self.floors, self.costed = exact, floors, set[str]()

    def cost(self, units: Sequence[Unit]) -> None:
        for u in units:
            u.cost, u.block_tokens = self.exact[u.unit_id]
            self.costed.add(u.unit_id)

    def floor(self, unit: Unit, room: int) -> tuple[int, int]:
        cost, block = self.exact[unit.unit_id]
        share = self.floors[unit.unit_id]
        return int(cost * share), int(block * share)

    def likely(self, unit: Unit) -> int:
        return self.exact[unit.unit_id][0]


@st.composite
def _case(draw: st.DrawFn) -> tuple[BudgetPolicy, list[tuple[str, Partition, int, int, bool]],
                                    dict[str, float], int, int | None]:
    parts = {}
    for p in Partition:
        minimum = draw(st.integers(0, 60))
        maximum = draw(st.none() | st.integers(minimum, 400))
        parts[p.value] = {"minimum": minimum, "maximum": maximum,
                          "eviction": draw(st.sampled_from(_EVICTIONS))}
    policy = BudgetPolicy.model_validate({"response_reserve": 0, "protocol_overhead": 0,
                                          "safety_margin": 0, "partitions": parts})
    specs = []
    for i in range(draw(st.integers(0, 30))):
        cost = draw(st.integers(1, 300))
        specs.append((f"u{i:02d}", draw(st.sampled_from(list(Partition))), cost,
                      draw(st.integers(0, cost)), draw(st.booleans()) and i % 7 == 0))
    floors = {s[0]: draw(st.floats(0, 1)) for s in specs}
    return policy, specs, floors, draw(st.integers(50, 900)), draw(st.none() | st.integers(0, 300))


def _units(specs: list[tuple[str, Partition, int, int, bool]], lazy: bool) -> list[Unit]:
    return [Unit(uid, part, None if lazy else cost, order, 0 if lazy else block, required)
            for order, (uid, part, cost, block, required) in enumerate(specs)]


@settings(max_examples=300, deadline=None)
@given(_case())
def test_lazy_allocation_equals_eager_allocation(case: tuple) -> None:  # type: ignore[type-arg]
    policy, specs, floors, usable, cap = case
    eager = allocate(_units(specs, lazy=False), policy, usable, cap)
    priced = _Priced({s[0]: (s[2], s[3]) for s in specs}, floors)
    lazy = allocate(_units(specs, lazy=True), policy, usable, cap, costing=priced)
    assert [u.unit_id for u in lazy.admitted] == [u.unit_id for u in eager.admitted]
    assert {u.unit_id for u in lazy.evicted} == {u.unit_id for u in eager.evicted}
    assert (lazy.blocked, lazy.used) == (eager.blocked, eager.used)
    for p in Partition:
        lp, ep = lazy.partitions[p], eager.partitions[p]
        assert lp.used == ep.used
        assert lp.demand <= ep.demand
        if lp.uncounted == 0:
            assert lp.demand == ep.demand
    for u in lazy.evicted:
        if u.cost is None:  # evicted on its bound: the bound really exceeded the room
            assert u.floor is not None and u.bound is not None
            assert u.floor <= priced.exact[u.unit_id][0]
            assert not u.required or lazy.blocked is BlockedReason.MINIMUMS_EXCEED_BUDGET


def test_uncosted_units_without_a_costing_are_refused() -> None:
    policy = BudgetPolicy.model_validate({
        "response_reserve": 0, "protocol_overhead": 0, "safety_margin": 0,
        "partitions": {p.value: {"minimum": 0, "eviction": "first"} for p in Partition}})
    try:
        allocate([Unit("x", Partition.BACKGROUND, None, 0)], policy, 100)
    except ValueError as exc:
        assert "Costing" in str(exc)
    else:
        raise AssertionError("an uncosted unit was allocated without a Costing")


def _words(rnd: random.Random, n: int) -> str:
    vocab = ["retry", "backoff", "429", "rate", "limit", "jitter", "header", "quota", "(x)"]
    return " ".join(rnd.choice(vocab) for _ in range(n))


def test_cold_assembly_evicts_most_candidates_untokenized_and_says_so() -> None:
    rnd = random.Random(7)
    cands = [item(f"doc-{i:03d}", f"rate limit 429 {_words(rnd, rnd.randint(50, 3000))}")
             for i in range(120)]
    req = request(cands)
    counter = TokenCounter()
    out = assemble(req, counter=counter)
    assert isinstance(out, Ready)
    m = out.manifest
    part = m.budget.partitions[Partition.DIRECT_EVIDENCE.value]
    assert part.uncounted > 0
    assert counter.misses < len(cands)  # fewer texts tokenized than candidates
    untokenized = [e for e in m.excluded if "not tokenized" in e.detail]
    assert len(untokenized) == part.uncounted
    counted = [e for e in m.excluded if e.reason is ExclusionReason.BUDGET_EVICTED
               and "not tokenized" not in e.detail]
    assert part.demand >= part.used + sum(int(e.detail.split("(")[1].split(" ")[0])
                                          for e in counted)
    sent = {v.item_id for v in parse_data_blocks(out.rendered_evidence)}
    assert sent and sent <= {e.item_id for e in m.included}
    by_id = {c.item_id: c for c in cands}
    for e in untokenized:
        assert e.reason is ExclusionReason.BUDGET_EVICTED
        floor = int(e.detail.split("at least ")[1].split(" tokens")[0])
        assert floor <= count_tokens(by_id[e.item_id].content)
        assert e.item_id not in sent
    # the same request with every count cached ranks and allocates identically
    again = assemble(req, counter=counter)
    assert isinstance(again, Ready)
    assert again.serialized.hash == out.serialized.hash


def test_evidence_budget_evicts_untokenized_on_the_block_bound() -> None:
    rnd = random.Random(3)
    cands = [item(f"doc-{i:03d}", f"rate limit 429 {_words(rnd, rnd.randint(300, 900))}")
             for i in range(40)]
    out = assemble(request(cands, evidence_budget=1_500))
    assert isinstance(out, Ready)
    capped = [e for e in out.manifest.excluded
              if e.detail.endswith("left of the evidence budget; not tokenized, partition "
                                   "direct_evidence)")]
    assert capped, [e.detail for e in out.manifest.excluded][:3]
    by_id = {c.item_id: c for c in cands}
    for e in capped:
        block_floor = int(e.detail.split("data block at least ")[1].split(" tokens")[0])
        assert block_floor <= count_tokens(by_id[e.item_id].content)
    assert out.manifest.budget.evidence_block_tokens <= 1_500


def test_excerpt_records_report_the_costed_block_or_nothing() -> None:
    from context.budget.costs import block_cost
    from tests.context.builders import code

    rnd = random.Random(5)
    lines = [f"retry 429 rate limit {_words(rnd, 8)}" for _ in range(400)]
    small = code("code-small", "\n".join(lines), path="src/a.py")
    huge = [code(f"code-big-{i}", "\n".join(lines * 3), path=f"src/b{i}.py")
            for i in range(30)]
    out = assemble(request([small, *huge]))
    assert isinstance(out, Ready)
    frame = block_cost(TokenCounter(), 0).message_tokens
    included = {e.item_id: e for e in out.manifest.included}
    untokenized = {e.item_id for e in out.manifest.excluded if "not tokenized" in e.detail}
    excerpts = {t.input_item_ids[0]: t for t in out.manifest.transforms if t.type == "excerpt"}
    assert set(excerpts) & set(included) and set(excerpts) & untokenized
    for iid, rec in excerpts.items():
        if iid in included:
            assert rec.token_estimate_after == included[iid].tokens - frame
        elif iid in untokenized:
            assert rec.token_estimate_after is None
