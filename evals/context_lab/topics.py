"""Topic modes: does coverage come from the sources' labels or from their content.

A lab source declares the topics it covers (``topics``). Handed to the engine as the item's
declared topics, a label *is* coverage (``context.ranking.relevance.covered_topics``): the
engine never reads the content to confirm it. So a case whose correct source does not
contain the topic's words at all measures the label, not the engine's judgement. The
``--topics`` option runs every case in one or both modes:

``labels``   the sources as written: declared topics count as coverage (the engine's
             behaviour for a producer that labels what it fetched).
``content``  declared topics are dropped before any strategy sees the sources. The engine
             gets items with no topics, so coverage can only come from its own term
             matching of the required topics' terms (the topic name, its words, and the
             case's ``topic_terms``) against the content. The baselines, which have no
             coverage judgement of their own, get each candidate's topics as the required
             topics whose terms occur in its content — the same rule
             (``TopicSpec.match_terms``, case-insensitive substrings), so their
             ``missing_topics`` come from the content too.

The graders always judge against the labels: they are the case author's ground truth of
what covers what, and only the strategies lose them. A topic no content can name — the
case marks it ``needs_label`` with the reason — is expected to be reported missing in
``content`` mode (the case is graded with it added to ``expected_missing_topics``): the
engine must say it has no evidence rather than guess, and a mark that has gone stale
(the engine now finds the topic in the content) fails the case instead of hiding.

``both`` (the default) runs ``labels`` then ``content``. A case the engine passes only on
labels — passes in ``labels`` mode, fails in ``content`` mode — is listed and fails the
release gate (``content:no_case_passes_only_on_labels``); every check of the
``content`` mode's own gate is prefixed ``content:``.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from context import TopicSpec
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.errors import DatasetError
from evals.context_lab.gate import ContextReleaseGate, GateCheck

LABELS = "labels"
CONTENT = "content"
BOTH = "both"
TOPIC_MODES = (LABELS, CONTENT)
TOPIC_OPTIONS = (LABELS, CONTENT, BOTH)
CONTENT_PREFIX = "content:"
LABEL_ONLY_CHECK = "no_case_passes_only_on_labels"


def modes_of(option: str) -> tuple[str, ...]:
    """The modes ``--topics`` runs, in report order; anything else is unusable input."""
    if option == BOTH:
        return TOPIC_MODES
    if option in TOPIC_MODES:
        return (option,)
    raise DatasetError("--topics", f"must be one of {', '.join(TOPIC_OPTIONS)}, got {option!r}")


def topic_spec(case: LabCase, name: str) -> TopicSpec:
    """The engine's topic for ``name``: its words (``-`` and ``_`` read as spaces) and the
    case's ``topic_terms``; the name itself is always a term (``TopicSpec.match_terms``)."""
    words = " ".join(name.replace("-", " ").replace("_", " ").split())
    terms = ([words] if words != name else []) + list(case.topic_terms.get(name, ()))
    return TopicSpec(name=name, terms=tuple(dict.fromkeys(terms)))


def content_topics(case: LabCase, source: LabSource) -> list[str]:
    """The case's required topics whose terms occur in ``source``'s content."""
    text = source.content.casefold()
    return [t for t in case.required_topics
            if any(term in text for term in topic_spec(case, t).match_terms)]


def engine_sources(sources: dict[str, LabSource], mode: str) -> dict[str, LabSource]:
    """What the engine strategy is given: in ``content`` mode no source declares a topic."""
    if mode == LABELS:
        return sources
    return {sid: s.model_copy(update={"topics": []}) for sid, s in sources.items()}


def baseline_sources(case: LabCase, sources: dict[str, LabSource],
                     mode: str) -> dict[str, LabSource]:
    """What a baseline is given for ``case``: in ``content`` mode each candidate's topics
    are the required topics its content names (see the module doc)."""
    if mode == LABELS:
        return sources
    out = dict(sources)
    for sid in case.candidate_source_ids:
        out[sid] = sources[sid].model_copy(update={"topics": content_topics(case, sources[sid])})
    return out


def graded_case(case: LabCase, mode: str) -> LabCase:
    """The case as graded in ``mode``: in ``content`` mode a topic that needs a label is
    expected missing."""
    if mode == LABELS or not case.needs_label:
        return case
    missing = [t for t in case.required_topics
               if t in case.expected_missing_topics or t in case.needs_label]
    return case.model_copy(update={"expected_missing_topics": missing})


class LabelNeed(BaseModel):
    """A topic of a case that only a label can show covered, and why."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    topic: str
    why: str


def label_needs(cases: Iterable[LabCase]) -> list[LabelNeed]:
    return [LabelNeed(case_id=c.id, topic=t, why=why)
            for c in cases for t, why in c.needs_label.items()]


def label_only(labels: dict[str, bool], content: dict[str, bool]) -> list[str]:
    """Cases passed in ``labels`` mode and failed in ``content`` mode (case id → passed)."""
    return [cid for cid, ok in labels.items() if ok and not content.get(cid, False)]


def combined_gate(gates: dict[str, ContextReleaseGate],
                  label_only_cases: list[str] | None) -> ContextReleaseGate:
    """The release gate over every mode run: each mode's checks (the ``content`` mode's
    prefixed ``content:``) and, when both modes ran, no case the candidate passes only on
    labels. Improvements, regressions and the baseline are the first mode's."""
    first = next(iter(gates.values()))
    checks: dict[str, GateCheck] = {}
    for mode, gate in gates.items():
        prefix = "" if mode == LABELS else CONTENT_PREFIX
        checks.update({prefix + name: check for name, check in gate.checks.items()})
    if label_only_cases is not None:
        checks[CONTENT_PREFIX + LABEL_ONLY_CHECK] = GateCheck(passed=not label_only_cases,
                                                              cases=list(label_only_cases))
    return first.model_copy(update={"passed": all(c.passed for c in checks.values()),
                                    "checks": checks})
