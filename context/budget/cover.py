"""Cheapest-cover order: the direct-evidence order tried when the rank order loses a topic
(docs/context-engine.md#partition-budgets).

Direct evidence is ranked *coverage first*: for each required topic, its best item, where
"best" puts the item covering the most required topics first
(``context.ranking.relevance.coverage_first``). Ranking cannot know token costs (data
items are costed lazily by the budget), so under a tight evidence budget a long item
covering two topics can take the room that two short items would have used to cover
three: the allocator fills in rank order, the long item fits, and a third topic is lost
although a cheaper set of admitted items covers all of them.

:func:`cover_order` is the classic greedy weighted set cover on the now exact costs:
required units first, then repeatedly the unit covering the most not-yet-covered topics
per token (ties: the earlier in rank order), then every other unit in rank order. The
budget stage allocates again in this order only when a required topic was lost to the
budget that an evicted unit covers, and keeps that allocation only when it covers more
required topics (``BudgetStage``); otherwise the rank order stands. Pure and
deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from context.budget.allocation import Unit

__all__ = ["cover_order"]


def cover_order(units: Sequence[Unit], topics: Mapping[str, frozenset[str]],
                covered: frozenset[str] = frozenset()) -> list[Unit]:
    """``units`` (all costed) reordered for coverage per token; ``topics`` maps a unit id
    to the required topics it answers, ``covered`` are topics answered already."""
    ranked = sorted(units, key=lambda u: (u.order, u.unit_id))
    placed = [u for u in ranked if u.required]
    have = set(covered).union(*(topics.get(u.unit_id, frozenset()) for u in placed))
    rest = [u for u in ranked if not u.required]
    while True:
        best: Unit | None = None
        best_new = 0
        for u in rest:
            new = len(topics.get(u.unit_id, frozenset()) - have)
            # more new topics per token; compared as products, no float rounding
            if new and (best is None or new * max(best.exact, 1) > best_new * max(u.exact, 1)):
                best, best_new = u, new
        if best is None:
            break
        placed.append(best)
        rest.remove(best)
        have |= topics.get(best.unit_id, frozenset())
    return placed + rest
