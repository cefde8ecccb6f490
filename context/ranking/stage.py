"""The ranking stage: supersession, then topic coverage decides what a step needs
(docs/context-engine.md#ranking-coverage-and-load-modes).

Of two admitted revisions of the same canonical item the newer wins and the older is
excluded ``superseded``. Every remaining item either has a place by policy (a role exempt
from topic coverage, or a resident load mode), is required by the step, or must cover one
of the step's required topics; anything else is excluded ``not_required``. What an item
covers is found by one case-insensitive term scan per item, shared with relevance ordering.
"""

from __future__ import annotations

from context.assembly.state import AssemblyState
from context.ranking.relevance import TermScan, covered_topics, supersede, topic_terms
from context.vocabulary import ExclusionReason, LoadMode

__all__ = ["rank"]


def rank(state: AssemblyState, term_scan: TermScan) -> None:
    topics = state.request.required_topics
    pool = [a for a in state.admitted.values() if a.item.item_id != state.step_item_id]
    winners, losers = supersede([a.item for a in pool])
    for loser, winner in losers:
        state.exclude(
            state.admitted[loser.item_id], ExclusionReason.SUPERSEDED, "supersession",
            f"canonical key {loser.key}: revision {winner.revision!r} of {winner.item_id} "
            f"is newer", superseded_by=winner.item_id,
        )
    exempt = set(state.policy.placement.topic_exempt_roles)
    not_required = 0
    term_sets = topic_terms(topics)
    for item in winners:
        admitted = state.admitted[item.item_id]
        admitted.covered = covered_topics(admitted.item, topics, term_sets, term_scan)
        placed = (admitted.item.intended_role in exempt
                  or admitted.load_mode is LoadMode.RESIDENT)
        if placed:
            admitted.admission_reason = admitted.admission_reason or "resident_by_policy"
            continue
        if admitted.item.required:
            admitted.admission_reason = "required_by_step"
        elif not topics:
            admitted.admission_reason = "no_required_topics_declared"
        elif admitted.covered:
            admitted.admission_reason = "covers_required_topics:" + ",".join(admitted.covered)
        else:
            not_required += 1
            state.exclude(admitted, ExclusionReason.NOT_REQUIRED, "coverage",
                          "covers none of the required topics "
                          f"{[topic.name for topic in topics]}")
    state.stage(
        "ranking",
        f"{len(losers)} superseded, {not_required} not required, "
        f"{len(state.admitted)} remain",
    )
