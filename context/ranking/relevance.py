"""Ranking among *eligible* items: supersession, topic coverage, order
(docs/context-engine.md#ranking-coverage-and-load-modes).

Nothing here can admit an item the gates rejected: these functions only ever receive
items that passed every gate, and they only remove or order.

* **Supersession.** Items sharing a canonical key are versions of one object; the newest
  wins and the others are excluded ``superseded``. "Newest" compares, in order: integer
  revisions when both are integers, then ``observed_at`` (when both have one), then the
  revision string, then the item id — a total, deterministic order. A revision the task
  pins was already enforced by the required-revision gate.
* **Coverage.** An item covers a required topic when the topic name is among its
  ``topics`` or any of the topic's terms (or its name) occurs, case-insensitively, in its
  content, summary or claim. ``missing_topics`` are the required topics no included
  *evidence* covers: loaded data-zone items and the payload of confirmed tool results
  (``context.ranking.coverage``) — never the task contract or control text that merely names
  the topic, state, summaries, checkpoints, agent output (a draft's own list of missing
  evidence) or disclosed index entries.
* **Not required.** An evidence candidate (not resident, not of a topic-exempt role) that
  covers no required topic is excluded ``not_required`` — it is never padded in. With no
  required topics the step declares no contract to filter against, so nothing is
  excluded for this reason.
* **Order** (the budget fills in this order): required items first, then more required
  topics covered, then decision/question relevance (distinct decision terms found), then
  stage match, then authority, then the shorter text (characters: known before any
  tokenizing), then item id. Direct evidence is
  ordered *coverage first*: for each required topic in request order, its best item not
  yet placed; then everything else by rank — so a tight budget spends itself on covering
  topics, not on the second-best item for one topic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from context.admission.needles import find_casefolded, find_in
from context.items import ContextItem
from context.memo import ItemMemo
from context.request import TopicSpec
from context.vocabulary import NEVER_EVIDENCE, LoadMode, SourceType, Trust, Zone

_WORD = re.compile(r"\w{4,}")
#: a run of CJK characters (Han, kana, Hangul): written without spaces, so it is no "word"
_CJK_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_COVER = ItemMemo()
_RELEVANCE = ItemMemo()


def clear_memo() -> None:
    _COVER.clear()
    _RELEVANCE.clear()


def decision_terms(question: str, decision: str) -> tuple[str, ...]:
    """Distinct words of four or more characters of the question and decision, lower-cased;
    CJK text, which has no spaces between words, gives its character bigrams instead (a
    Chinese question is otherwise one long "word" that no source contains)."""
    text = f"{question}\n{decision}".casefold()
    words = set(_WORD.findall(_CJK_RUN.sub(" ", text)))
    for run in _CJK_RUN.findall(text):
        words.update(run[i:i + 2] for i in range(len(run) - 1))
    return tuple(sorted(words))


class TermScan:
    """One assembly's scan of each item's searchable text for every topic and decision term.

    Coverage (ranking) and relevance (ordering) ask about the same text, case-insensitively;
    one scan per item finds all their terms at once (``context.admission.needles``). What it found
    is kept for this assembly only.
    """

    def __init__(self, needles: Sequence[str]) -> None:
        self.needles = tuple(sorted(set(needles)))
        self._known = frozenset(self.needles)
        self._found: dict[int, tuple[ContextItem, frozenset[str]]] = {}

    def covers(self, terms: Sequence[str]) -> bool:
        return self._known.issuperset(terms)

    def found(self, item: ContextItem) -> frozenset[str]:
        """The needles that occur, case-insensitively, in the item's searchable text."""
        hit = self._found.get(id(item))
        if hit is not None and hit[0] is item:
            return hit[1]
        present = find_casefolded(self.needles, _searchable(item))
        self._found[id(item)] = (item, present)
        return present

    def clear(self) -> None:
        self._found.clear()


def _searchable(item: ContextItem) -> str:
    return "\n".join((item.content, item.summary or "", item.claim or ""))


def _present(item: ContextItem, terms: Sequence[str], scan: TermScan | None) -> frozenset[str]:
    if scan is not None and scan.covers(terms):
        return scan.found(item)
    return find_in(terms, _searchable(item).casefold())


def topic_terms(topics: Sequence[TopicSpec]) -> tuple[tuple[str, ...], ...]:
    return tuple(t.match_terms for t in topics)


def covered_topics(
    item: ContextItem,
    topics: Sequence[TopicSpec],
    term_sets: tuple[tuple[str, ...], ...] | None = None,
    scan: TermScan | None = None,
) -> tuple[str, ...]:
    """Names of the required topics ``item`` covers (memoized per item and topic set)."""
    if not topics:
        return ()
    term_sets = topic_terms(topics) if term_sets is None else term_sets
    found: tuple[int, ...] | None = _COVER.get(item, term_sets)
    if found is None:
        declared = {t.casefold() for t in item.topics}
        present: frozenset[str] | None = None
        hits: list[int] = []
        for i, terms in enumerate(term_sets):
            if terms and terms[0] in declared:
                hits.append(i)
                continue
            if present is None:
                present = _present(item, [t for ts in term_sets for t in ts], scan)
            for t in terms:
                if t in present:
                    hits.append(i)
                    break
        found = tuple(hits)
        _COVER.put(item, term_sets, found)
    return tuple(topics[i].name for i in found)


def decision_relevance(item: ContextItem, terms: tuple[str, ...],
                       scan: TermScan | None = None) -> int:
    """Distinct decision terms found in the item (memoized per item and term set)."""
    if not terms:
        return 0
    found: int | None = _RELEVANCE.get(item, terms)
    if found is None:
        present = _present(item, terms, scan)
        found = 0
        for t in terms:
            if t in present:
                found += 1
        _RELEVANCE.put(item, terms, found)
    return found


def _rev_key(item: ContextItem) -> tuple[int, int, float, float, str, str]:
    """Newest revision first: integer revisions, then the source's own date (when this
    revision was written), then when it was read, then the revision string, then the id."""
    rev = item.revision or ""
    as_int = int(rev) if rev.isdigit() else -1
    dated = _ts(item.source_date)
    observed = _ts(item.observed_at)
    return (1 if rev.isdigit() else 0, as_int, dated, observed, rev, item.item_id)


def _ts(value: datetime | None) -> float:
    if value is None or value.tzinfo is None:
        return float("-inf")
    return value.timestamp()


def supersede(
    items: Sequence[ContextItem],
) -> tuple[list[ContextItem], list[tuple[ContextItem, ContextItem]]]:
    """Winners per canonical key (input order kept) and ``(loser, winner)`` pairs."""
    groups: dict[str, list[ContextItem]] = {}
    for item in items:
        groups.setdefault(item.key, []).append(item)
    winners: set[str] = set()
    losers: list[tuple[ContextItem, ContextItem]] = []
    for group in groups.values():
        if len(group) == 1:
            winners.add(group[0].item_id)
            continue
        best = max(group, key=_rev_key)
        winners.add(best.item_id)
        losers += [(other, best) for other in group if other is not best]
    return [i for i in items if i.item_id in winners], losers


@dataclass(frozen=True)
class RankInfo:
    required: bool
    covered: tuple[str, ...]
    relevance: int
    stage_match: bool
    authority: int
    size: int
    item_id: str

    def sort_key(self) -> tuple[int, int, int, int, int, int, str]:
        return (
            0 if self.required else 1,
            -len(self.covered),
            -self.relevance,
            0 if self.stage_match else 1,
            -self.authority,
            self.size,
            self.item_id,
        )


def coverage_first(infos: Sequence[RankInfo], topic_names: Sequence[str]) -> list[RankInfo]:
    """Required items, then the best item per uncovered topic, then the rest by rank."""
    ranked = sorted(infos, key=RankInfo.sort_key)
    placed: list[RankInfo] = [r for r in ranked if r.required]
    taken = {r.item_id for r in placed}
    covered = {t for r in placed for t in r.covered}
    for topic in topic_names:
        if topic in covered:
            continue
        for r in ranked:
            if r.item_id not in taken and topic in r.covered:
                placed.append(r)
                taken.add(r.item_id)
                covered.update(r.covered)
                break
    placed += [r for r in ranked if r.item_id not in taken]
    return placed


_NOT_EVIDENCE = (SourceType.MODEL_SUMMARY, SourceType.CHECKPOINT, SourceType.AGENT_OUTPUT)


def evidence_topics(
    item: ContextItem, zone: Zone, load_mode: LoadMode | None, covered: Sequence[str],
    trust: Trust | None = None,
) -> Sequence[str]:
    """The required topics an admitted item answers for ``missing_topics``.

    Only loaded evidence answers a topic: not the task contract or control text that
    merely names it, not state, not a summary or checkpoint (derived claims), not agent
    output (a draft that lists a topic under its missing evidence must not cover it on the
    next step), not text whose effective ``trust`` is never evidence
    (``unvetted_external_data``, shown at most as quoted data), and not a disclosed index
    entry whose body was never loaded. An editable project file (``plan.md``) answers only
    the topics its acquirer declared: anyone may write its text, and "find evidence on X"
    in a plan mentions X without being evidence on X. Tool results:
    ``context.ranking.coverage``.
    """
    if zone is not Zone.DATA or load_mode is LoadMode.DISCLOSE:
        return ()
    if trust in NEVER_EVIDENCE or item.trust in NEVER_EVIDENCE:
        return ()
    if item.source_type in _NOT_EVIDENCE:
        return ()
    if item.source_type is SourceType.EDITABLE_PROJECT_FILE:
        declared = {t.casefold() for t in item.topics}
        return [t for t in covered if t.casefold() in declared]
    return covered
