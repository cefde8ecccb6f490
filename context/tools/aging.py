"""Which tool exchanges have aged out of the verbatim window (and get compacted).

The newest ``tool_pairs.keep_recent`` pairs, extended to whole assistant turns, stay
verbatim; older pairs age in blocks of ``tool_pairs.compact_block``, cut back to a turn
boundary (docs/context-engine.md#tool-pairing-and-anomalies). The rule is a pure function
of the paired history and the policy so that the tool stage and a caller preparing
candidates agree on it: the job's candidate loader shows a research note in its ledger only
once the note's own exchange has aged, because until then the exchange itself is in the
request (docs/architecture.md#the-research-loop) — and the ledger then changes on the same
turns the history summary does, not on every note.
"""

from __future__ import annotations

from collections.abc import Sequence

from context.policy import ContextPolicy
from context.tool_history import ToolHistory, ToolPair
from context.tools.pairing import pair_tool_history, recent_call_ids

__all__ = ["aged", "aged_call_ids", "folds_history", "recent_call_ids"]



def aged(pairs: Sequence[ToolPair], keep: int, block: int) -> list[ToolPair]:
    """The pairs outside the recent window, in a multiple of ``block`` (oldest first), cut
    back to a turn boundary: the rest stays verbatim until a whole block more has aged."""
    recent = set(recent_call_ids(pairs, keep))
    older = [pair for pair in pairs if pair.call_id not in recent]
    if block <= 1:
        return older
    cut = len(older) // block * block
    while 0 < cut < len(older) and older[cut].turn == older[cut - 1].turn:
        cut -= 1
    return older[:cut]


def folds_history(policy: ContextPolicy) -> bool:
    """Whether assemblies under ``policy`` lay older exchanges out as the research log
    (``context.tools.fold``): a fold period, compaction on, and summaries allowed."""
    pairs = policy.tool_pairs
    return bool(pairs.fold_every and pairs.compact_older
                and "summarize" in policy.transforms.allowed)


def aged_call_ids(history: ToolHistory, policy: ContextPolicy) -> frozenset[str]:
    """The call ids an assembly under ``policy`` will not show verbatim (compacted, or left
    to compete for the tool-pair budget when compaction is off)."""
    pair_policy = policy.tool_pairs
    pairing = pair_tool_history(history, allow_partial_evidence=pair_policy.allow_partial_evidence)
    if pairing.blocked is not None:
        return frozenset()
    if folds_history(policy):
        from context.tools.fold import plan_fold  # fold is the one stage module above this

        plan = plan_fold(pairing.pairs, pair_policy.keep_recent, pair_policy.fold_every)
        return frozenset(p.call_id for p in (*plan.logged, *plan.folded))
    return frozenset(pair.call_id for pair in aged(pairing.pairs, pair_policy.keep_recent,
                                                   pair_policy.compact_block))
