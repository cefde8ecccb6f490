"""The ``top-k`` baseline: a naive lexical retriever (docs/context-engine.md#baselines).

What an agent gets from "retrieve the k best matches and paste them". The query is the
case's question plus its required-topic names (``-`` and ``_`` read as spaces); a term is
a distinct word of four or more word characters, case-folded — the rule the engine uses
for decision terms, written out here so the baseline does not move when the engine does.
A source's score is the number of query terms that occur among the words of its title and
content (never its ``topics`` labels: those are the graders' ground truth, which a
retriever does not have).

Sources scoring 0 are not retrieved (a lexical index returns only documents that match a
term). The rest are walked by score, highest first, ties broken by candidate order; each
is taken if its evidence block still fits the budget (else ``budget_evicted``, and the walk
goes on to the next), until ``k`` are taken. Every source not taken for another reason is
``ranking_lost`` — outside the top ``k``, or no query term at all.

``k`` defaults to :data:`DEFAULT_K` (``--top-k``). No gate of any kind is applied
(no trust, freshness, permission, scope, revision or security check): a retriever ranks,
it does not admit. Blocks are rendered and counted with the shared ruler and the tool
history is replayed verbatim (``naive_packet``).
"""

from __future__ import annotations

import re

from context import ContextPolicy
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.mapping import source_to_item
from evals.context_lab.naive_packet import Packer, naive_packet
from evals.context_lab.packet import Packet

STRATEGY = "top-k"
DEFAULT_K = 3
_WORD = re.compile(r"\w{4,}")


def terms(text: str) -> frozenset[str]:
    """Distinct words of four or more word characters, case-folded."""
    return frozenset(_WORD.findall(text.casefold()))


def query_terms(case: LabCase) -> frozenset[str]:
    topics = " ".join(t.replace("-", " ").replace("_", " ") for t in case.required_topics)
    return terms(f"{case.question}\n{topics}")


def overlap(query: frozenset[str], source: LabSource) -> int:
    return len(query & terms(f"{source.title}\n{source.content}"))


def ranking(case: LabCase, sources: dict[str, LabSource]) -> list[tuple[str, int]]:
    """``(source id, score)`` for every candidate: score descending, then candidate order."""
    query = query_terms(case)
    scored = [(sid, overlap(query, sources[sid])) for sid in case.candidate_source_ids]
    order = {sid: i for i, sid in enumerate(case.candidate_source_ids)}
    return sorted(scored, key=lambda pair: (-pair[1], order[pair[0]]))


def run_top_k(case: LabCase, sources: dict[str, LabSource], *, budget: int,
              policy: ContextPolicy, k: int = DEFAULT_K) -> Packet:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    packer = Packer(budget)
    for rank, (sid, score) in enumerate(ranking(case, sources), start=1):
        if score == 0:
            packer.exclude(sid, "ranking_lost", "no query term occurs in it")
            continue
        if len(packer.selected) == k:
            packer.exclude(sid, "ranking_lost", f"rank {rank} (overlap {score}), top {k} taken")
            continue
        left = packer.left
        tokens = packer.offer(sources[sid], source_to_item(sources[sid], policy))
        if tokens is not None:
            packer.exclude(sid, "budget_evicted", f"{tokens} tokens overflow {left} left")
    return naive_packet(case, sources, packer, strategy=STRATEGY)
