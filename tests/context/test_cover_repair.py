"""The cheapest-cover repair: a tight evidence budget must not lose a required topic to a
long item covering other topics when cheaper admitted items cover them all
(context/budget/cover.py, the lab case ctx-25-multi-topic-tight-budget)."""

from __future__ import annotations

from context import Ready, assemble, count_tokens
from context.budget.allocation import Unit
from context.budget.cover import cover_order
from context.items import ContextItem
from context.limits.blocks import data_block
from context.seal.render import parse_data_blocks
from context.vocabulary import Partition
from tests.context.builders import item, request, topic

TOPICS = (topic("photo-rights", "photo rights"), topic("corrections"), topic("embargo"))
HANDBOOK = item("handbook", "Live blog handbook. Corrections: post a new entry that quotes the "
                "wrong figure and links the one it corrects. Photo rights: agency pictures may "
                "run for 30 days with the credit line. " + "Keep entries short and dated. " * 12)
PHOTO = item("photo", "Photo rights: agency pictures for 30 days with the credit line.")
CORR = item("corr", "Corrections go at the top of the article within 24 hours.")
EMBARGO = item("embargo", "Embargo: never publish before the issuer's timestamp (UTC).")


def _blocks(*items: ContextItem) -> int:
    return sum(count_tokens(data_block(i)) for i in items)


def _run(budget: int) -> Ready:
    out = assemble(request([HANDBOOK, PHOTO, CORR, EMBARGO], required_topics=TOPICS,
                           evidence_budget=budget,
                           question="Photos, corrections and the embargo for the live blog?"))
    assert isinstance(out, Ready)
    return out


def test_cheap_items_cover_what_the_long_one_would_crowd_out() -> None:
    singles = _blocks(PHOTO, CORR, EMBARGO)
    assert _blocks(HANDBOOK) <= singles < _blocks(HANDBOOK, EMBARGO)  # the trap is set
    out = _run(singles)
    assert out.manifest.missing_topics == []
    assert sorted(v.item_id for v in parse_data_blocks(out.rendered_evidence)) == [
        "corr", "embargo", "photo"]
    excluded = {e.item_id: e.reason for e in out.manifest.excluded}
    assert excluded == {"handbook": "budget_evicted"}
    budget_stage = next(s for s in out.manifest.stages if s.stage == "budget")
    assert "cheapest-cover order recovered ['embargo']" in budget_stage.detail


def test_rank_order_stands_when_nothing_is_lost() -> None:
    out = _run(10_000)  # everything fits: the handbook ranks first, no repair
    views = [v.item_id for v in parse_data_blocks(out.rendered_evidence)]
    assert set(views) == {"handbook", "photo", "corr", "embargo"}
    assert out.manifest.missing_topics == []
    budget_stage = next(s for s in out.manifest.stages if s.stage == "budget")
    assert "cheapest-cover" not in budget_stage.detail


def test_rank_order_stands_when_the_repair_covers_no_more() -> None:
    # room for one block only: either order covers exactly what one item covers, and the
    # handbook (two topics) is the better single item; the repair must not swap it out
    out = _run(_blocks(HANDBOOK))
    views = [v.item_id for v in parse_data_blocks(out.rendered_evidence)]
    assert views == ["handbook"]
    assert sorted(out.manifest.missing_topics) == ["embargo"]


def test_cover_order_is_greedy_topics_per_token() -> None:
    def unit(uid: str, cost: int, order: int, required: bool = False) -> Unit:
        return Unit(uid, Partition.DIRECT_EVIDENCE, cost, order, required=required)

    units = [unit("long", 250, 2), unit("a", 90, 3), unit("b", 100, 4), unit("c", 95, 5),
             unit("other", 10, 6), unit("must", 500, 7, required=True)]
    topics = {"long": frozenset({"x", "y"}), "a": frozenset({"x"}), "b": frozenset({"y"}),
              "c": frozenset({"z"}), "must": frozenset({"w"})}
    order = [u.unit_id for u in cover_order(units, topics)]
    assert order == ["must", "a", "c", "b", "long", "other"]
    # topics already answered elsewhere are no reason to place a unit early
    order = [u.unit_id for u in cover_order(units, topics, frozenset({"x", "y", "z"}))]
    assert order == ["must", "long", "a", "b", "c", "other"]
