"""The ``dump-all`` baseline: what a naive agent does without a context engine
(docs/context-engine.md#dump-all-baseline).

Candidates are taken in the order the case lists them, with no gate of any kind (no trust,
freshness, permission, scope, revision or relevance check), and packed until the first one
that would overflow the evidence budget; that one and everything after it are left out
(``budget_evicted``). The ruler (the engine's tokenizer on each rendered evidence block),
the task message, ``missing_topics`` and the verbatim tool-history replay are shared by
every baseline (``naive_packet``). The stronger baselines are ``baseline_gated``
(``gated-dump``) and ``baseline_topk`` (``top-k``).
"""

from __future__ import annotations

from context import ContextPolicy
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.mapping import source_to_item
from evals.context_lab.naive_packet import Packer, missing_topics_of, naive_packet, render_task
from evals.context_lab.packet import Packet

__all__ = ["STRATEGY", "missing_topics_of", "render_task", "run_dump_all"]

STRATEGY = "dump-all"


def run_dump_all(case: LabCase, sources: dict[str, LabSource], *, budget: int,
                 policy: ContextPolicy) -> Packet:
    packer = Packer(budget)
    overflowed = False
    for sid in case.candidate_source_ids:
        if overflowed:
            packer.exclude(sid, "budget_evicted", "after the first overflow")
            continue
        left = packer.left
        tokens = packer.offer(sources[sid], source_to_item(sources[sid], policy))
        if tokens is not None:
            overflowed = True
            packer.exclude(sid, "budget_evicted", f"{tokens} tokens overflow {left} left")
    return naive_packet(case, sources, packer, strategy=STRATEGY)
