"""The offline default provider: an article composed only of quoted, cited evidence.

``extractive`` calls no model. It reads the serialized request (``payload.read_request``),
takes the topics and their search terms from the task text the engine rendered (its
topic list: ``- <topic>``, or ``- <topic>: a, b`` when the terms are not the name), and
for each topic quotes, verbatim, the evidence sentences and statements that mention one of
its terms (``passages``: a sentence wrapped over lines is quoted whole), each with a
citation narrowed to the lines it quotes (``repo@commit:path#La-Lb``). It invents nothing:
every finding is the text of an admitted, hash-verified data block's lines, verbatim up to
line wrapping (docs/architecture.md#what-the-draft-quotes), and everything else in the
draft is fixed template text. Output is a pure function of the
payload, so the same request gives the same draft.

What counts as evidence: data blocks whose citation is a code excerpt, a document excerpt
or a web page excerpt (a ``#L<a>-L<b>`` locator, as ``activities.sources`` produces).
Earlier drafts, workspace files such as ``plan.md``, checkpoints and tool results are
data too, but they are not evidence and are never quoted as findings. Lines flagged as
instruction-like (``context.admission.security``) are never quoted; the source is named under open
items instead, as is every topic in the request's MISSING EVIDENCE section, every failed
acquisition and every reviewer comment.

Within a topic a bare header (``class Foo:``) or an export-list entry is quoted only when
nothing more informative about its terms was admitted, and a header directly followed by
its docstring is quoted by the docstring's first sentence (``salience``). Each topic's
section is headed by its name as words (``contracts.job_spec.topic_heading``:
``backoff_formula`` reads "Backoff formula"): the draft is what is published. A revision
answers each reviewer comment (``review_requests``): "Addressed (see topic)" only when that
topic's section changed against the revision it revises (the ``article_draft`` block of
the request) and, for a comment that named things, a new finding quotes one of them;
otherwise it says plainly which request found no evidence.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from activities.providers import salience
from activities.providers.base import ProviderResult
from activities.providers.passages import Passage, layout, passages, sentences
from activities.providers.payload import RequestView, read_request
from context import (
    LINE_RANGE,
    MISSING_EVIDENCE_HEADING,
    DataBlockView,
    Detector,
    block_citation,
    default_counter,
    get_adapter,
)
from contracts.job_spec import topic_heading

NAME = "extractive"
MODEL = "extractive-v1"
MAX_FINDINGS_PER_TOPIC = 8
MAX_QUOTE_CHARS = 240
PREAMBLE = (
    "_Drafted extractively by Pressroom from admitted evidence only: every finding quotes "
    "its source verbatim, with a citation. Nothing here is inferred or paraphrased._"
)
UNTRUSTED_NOTE = " (untrusted external source)"
_RANGE = LINE_RANGE
#: a topic line of the task contract's list: ``- name`` or ``- name: term, term``
#: (``activities.candidates.render_job_spec``), or as sealed before the list was compacted,
#: ``- name (search terms: term, term)`` (that form is read anywhere in the task text)
_TOPIC = re.compile(r"^- (?P<name>\S+) \(search terms: (?P<terms>.*)\)$")
_LISTED_TOPIC = re.compile(r"^- (?P<name>[^\s:]+)(?:: (?P<terms>.*))?$")
_QUESTION = re.compile(r"^Research question: (?P<q>.+)$")
_EVIDENCE_TRUST = frozenset({"repository_evidence", "external_evidence", "untrusted_external_data"})
_DETECTOR = Detector()


@dataclass(frozen=True)
class Finding:
    topic: str
    quote: str
    citation: str
    untrusted: bool = False


@dataclass(frozen=True)
class Brief:
    """What the trusted task text says the article must do."""

    question: str | None
    topics: list[tuple[str, list[str]]]
    missing: list[str]
    review_comments: list[str]


def read_brief(trusted: list[str]) -> Brief:
    question: str | None = None
    topics: list[tuple[str, list[str]]] = []
    missing: list[str] = []
    comments: list[str] = []
    for text in trusted:
        lines = text.splitlines()
        in_missing = any(line.strip() == f"## {MISSING_EVIDENCE_HEADING}" for line in lines[:1])
        in_comments = in_topics = False
        for line in lines:
            in_topics = (line.startswith("Topics the article must cover")
                         or (in_topics and line.startswith("- ")))
            if in_missing:
                if line.startswith("- "):
                    missing.append(line[2:].removesuffix(" (blocking)").strip())
                continue
            if (m := _QUESTION.match(line)) and question is None:
                question = m.group("q").strip()
            elif (m := _TOPIC.match(line)) or (in_topics and (m := _LISTED_TOPIC.match(line))):
                terms = [t.strip() for t in (m.group("terms") or m.group("name")).split(",")
                         if t.strip()]
                if m.group("name") not in (name for name, _ in topics):
                    topics.append((m.group("name"), terms))
            elif line.startswith("Reviewer's requested changes:"):
                in_comments = True
            elif in_comments and line.startswith("- "):
                comments.append(line[2:].strip())
    return Brief(question, topics, missing, comments)


def review_comments(view: RequestView, brief: Brief) -> list[str]:
    """Every round's requested changes: from the reviewer-data block (where they are data,
    never task text), or from the task text of requests sealed before that."""
    found: list[str] = []
    for block in view.blocks:
        if block.item_id.startswith("review_comments:"):
            lines = block.content.split("\n")
            found += [line[2:].strip() for line in lines if line.startswith("- ")]
    return list(dict.fromkeys([*found, *brief.review_comments]))


_REQUESTED = re.compile(
    r"`([^`\n]{2,60})`|\"([^\"\n]{3,60})\""
    r"|(?<![\w.])((?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*|_*[A-Za-z][A-Za-z0-9]*_\w*"
    r"|[A-Z][a-z0-9]+[A-Z]\w*|[A-Z][A-Z0-9]{2,})(?![\w])")


@dataclass(frozen=True)
class Request:
    """What one reviewer comment asks the research to find: the topic it belongs to and
    the names it gives (``terms``: backticked or quoted words and identifiers — dotted,
    snake_case, CamelCase or UPPER_CASE names; none when it only names a topic)."""

    comment: str
    topic: str | None
    terms: tuple[str, ...]


_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _pieces(text: str) -> set[str]:
    """The words inside names and prose (``SSL_SHUTDOWN_TIMEOUT``, ``maxSize``, "shut
    down"): lower-cased, three letters or more, a plural's final s dropped."""
    return {w.casefold().removesuffix("s") for w in _PIECE.findall(text) if len(w) >= 3}


def _closest_topic(comment: str, topics: list[tuple[str, list[str]]]) -> str | None:
    """The topic sharing the most words with the comment (its name's and its terms'
    pieces: ``SHUTDOWN_GRACE`` goes to ``shutdown_timeout``), the first among equals."""
    said = _pieces(comment)
    best, best_score = None, 0
    for topic, terms in topics:
        score = len(said & _pieces(" ".join((topic, *terms))))
        if score > best_score:
            best, best_score = topic, score
    return best


def review_requests(comments: list[str], topics: list[tuple[str, list[str]]]) -> list[Request]:
    """Each comment as a research request (pure: the agent and the draft writer read the
    same requests from the same request text). A comment belongs to the first topic it
    names (by name or search term); one that names none but gives names of its own
    belongs to the topic whose name and terms share most words with it, else to the first
    topic — a note needs a topic, and the draft says where it went."""
    out = []
    for comment in comments:
        lowered = comment.casefold()
        named = next((topic for topic, terms in topics
                      if any(w.casefold() in lowered for w in (topic, *terms))), None)
        found = [next(g for g in m.groups() if g) for m in _REQUESTED.finditer(comment)]
        topic_words = {w.casefold() for topic, terms in topics for w in (topic, *terms)}
        terms = tuple(dict.fromkeys(t.strip() for t in found
                                    if t.strip() and t.strip().casefold() not in topic_words))
        topic = named
        if topic is None and terms and topics:
            topic = _closest_topic(comment, topics) or topics[0][0]
        out.append(Request(comment, topic, terms))
    return out


def _section_key(heading: str) -> str:
    """A section's key: its ``topic_heading``, case-folded — the same for a topic's name
    (``backoff_formula``, as drafts before ``topic_heading`` headed it) and its heading
    ("Backoff formula"), so a revision of an older draft still finds its sections."""
    return topic_heading(heading.strip()).casefold()


def _sections(text: str) -> dict[str, list[str]]:
    """An earlier draft's findings by topic section (``## heading`` up to the next ``##``),
    keyed by ``_section_key``."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.split("\n"):
        if line.startswith("## "):
            current = _section_key(line[3:])
            out.setdefault(current, [])
        elif current is not None and line.startswith('- "'):
            out[current].append(line)
    return out


def previous_draft(view: RequestView) -> dict[str, list[str]] | None:
    """The findings of the draft this one revises, if the request shows it."""
    for block in view.blocks:
        if block.item_id.startswith("article_draft:"):
            return _sections(block.content)
    return None


def is_evidence(block: DataBlockView) -> bool:
    return (
        block.trust in _EVIDENCE_TRUST
        and block.role == "untrusted_data"
        and _RANGE.match(block_citation(block)) is not None
    )


def line_citation(block: DataBlockView, index: int, line_count: int,
                  last: int | None = None) -> str:
    """The block's citation narrowed to lines ``index``..``last`` (0-based; ``last``
    defaults to ``index``) when the range allows it."""
    cited = block_citation(block)
    m = _RANGE.match(cited)
    if m is None:
        return cited
    a, b = int(m.group("a")), int(m.group("b"))
    if b - a + 1 != line_count:  # content was transformed; cite the whole excerpt
        return cited
    first, final = a + index, a + (index if last is None else last)
    return f"{m.group('base')}#L{first}-L{final}"


_MARKERS = re.compile(r"^(?:[-*]\s+|#+\s+|>\s+|\d+\.\s+)")
_LOW_VALUE = re.compile(r"^(?:from\s+\S+\s+import\b|import\s|__all__\b|```|~~~)")
_DOC_QUOTES = ('"""', "'''")


def fragments(line: str) -> list[str]:
    """Quotable pieces of one evidence line; each is a verbatim substring of it.

    List, heading, quote and comment markers and surrounding docstring quotes are trimmed
    (never rewritten); a line too long to quote is split into sentences; headings, imports
    and code fences are skipped as carrying no claim; instruction-like text is never quoted.
    """
    text = line.strip()
    if text.startswith("#") and not text.startswith("# "):
        return []  # a Markdown heading such as "## Retries", or a shebang
    heading = text.startswith("# ") and not text.endswith((".", ":", ")"))
    if heading or _LOW_VALUE.match(text):
        return []
    text = _MARKERS.sub("", text, count=1)
    for q in _DOC_QUOTES:
        text = text.removeprefix(q).removesuffix(q)
    pieces = [text] if len(text) <= MAX_QUOTE_CHARS else sentences(text)
    out = []
    for piece in pieces:
        piece = piece.strip()
        if (
            12 <= len(piece) <= MAX_QUOTE_CHARS
            and re.search(r"[A-Za-z]{3}", piece)
            and not _DETECTOR.instruction_matches(piece)
        ):
            out.append(piece)
    return out


def _source_key(file_key: str) -> str:
    if file_key.startswith(("http://", "https://")):
        return file_key
    return re.split(r"[@:]", file_key, maxsplit=1)[0]


def _round_robin(groups: dict[str, list[Finding]], limit: int) -> list[Finding]:
    queues = [list(v) for v in groups.values()]
    out: list[Finding] = []
    while len(out) < limit and any(queues):
        for q in queues:
            if q and len(out) < limit:
                out.append(q.pop(0))
    return out


def quotable(block: DataBlockView, lines: list[str]) -> list[tuple[Passage, list[str]]]:
    """The block's passages (whole sentences and statements, ``passages``) with what each
    may be quoted as (``fragments``: nothing for a heading, an import or a fence)."""
    m = _RANGE.match(block_citation(block))
    base = m.group("base") if m else block_citation(block)
    # a page's URL, or the path part of ``repo@commit:path`` and ``name:path``
    path = base if base.startswith(("http://", "https://")) else base.split(":", 1)[-1]
    kind = layout(path)
    return [(p, fragments(p.text)) for p in passages(lines, kind, MAX_QUOTE_CHARS)]


def collect(view: RequestView, brief: Brief, extra: dict[str, list[str]] | None = None,
            ) -> tuple[list[Finding], list[str]]:
    """Findings per topic and the evidence sources holding instruction-like text.

    Within a topic the findings alternate between sources (repositories, document sets,
    pages) and, inside a source, between files, so one verbose file cannot crowd out the
    others; order is otherwise block order then line order — deterministic.
    """
    flagged: list[str] = []
    evidence = [b for b in view.blocks if is_evidence(b)]
    for block in evidence:
        if (block.flags or _DETECTOR.instruction_matches(block.content)) and (
            block_citation(block) not in flagged
        ):
            flagged.append(block_citation(block))
    # A passage's fragments do not depend on the topic: split (and screen) each block
    # once, not once per topic — this was most of the provider's time per draft.
    split = []
    for block in evidence:
        lines = block.content.split("\n")
        split.append((block, lines, quotable(block, lines)))
    findings: list[Finding] = []
    #: what an earlier topic already quotes: a later topic quotes other lines first, and
    #: repeats a quote only when it has nothing else (the same quote under several
    #: headings made a reviewer read it twice)
    quoted: set[str] = set()
    for topic, terms in brief.topics:
        lowered = [t.lower() for t in [*terms, *(extra or {}).get(topic, [])]]
        by_source: dict[str, dict[str, list[Finding]]] = {}
        repeats: dict[str, dict[str, list[Finding]]] = {}
        seen: set[str] = set()
        weak: list[tuple[Any, int, int, int, str]] = []
        for block, lines, per_passage in split:
            line_count = len(lines)
            for passage, quotes in per_passage:
                i, last = passage.start, passage.end
                for quote in quotes:
                    if quote in seen or not any(t in quote.lower() for t in lowered):
                        continue
                    rank = salience.score(lines[i] if i == last else passage.text, lowered)
                    explained = salience.docstring_after(lines, i) \
                        if rank == salience.HEADER and i == last else None
                    under = None if explained is None else next(
                        (p for p, q in per_passage if p.start == explained and len(q) == 1),
                        None)
                    if under is not None:
                        # a bare header says less than the docstring sentence under it
                        i, last, rank = under.start, under.end, salience.PROSE
                        quote = dict(per_passage)[under][0]
                    if rank <= salience.HEADER or not passage.whole:
                        # a header, a list entry, or a sentence the excerpt cuts: quoted
                        # only when nothing whole and more informative was admitted
                        weak.append((block, i, last, line_count, quote))
                        continue
                    seen.add(quote)
                    citation = line_citation(block, i, line_count, last)
                    m = _RANGE.match(citation)
                    file_key = m.group("base") if m else citation
                    files = (repeats if quote in quoted else by_source).setdefault(
                        _source_key(file_key), {})
                    untrusted = block.trust == "untrusted_external_data"
                    files.setdefault(file_key, []).append(
                        Finding(topic, quote, citation, untrusted)
                    )
        if not by_source:  # only what an earlier topic quotes: better that than nothing
            by_source = repeats
        if not by_source:  # only headers and list entries: better they than nothing
            for block, i, last, line_count, quote in weak:
                if quote in seen:
                    continue
                seen.add(quote)
                citation = line_citation(block, i, line_count, last)
                m = _RANGE.match(citation)
                file_key = m.group("base") if m else citation
                by_source.setdefault(_source_key(file_key), {}).setdefault(file_key, []).append(
                    Finding(topic, quote, citation, block.trust == "untrusted_external_data"))
        per_source = {k: _round_robin(v, MAX_FINDINGS_PER_TOPIC) for k, v in by_source.items()}
        chosen = _round_robin(per_source, MAX_FINDINGS_PER_TOPIC)
        quoted.update(f.quote for f in chosen)
        findings += chosen
    return findings, flagged


def _failed_tools(view: RequestView) -> list[str]:
    out = []
    for block in view.blocks:
        if block.role != "tool_result" or block.status not in ("error", "partial", "unknown"):
            continue
        reason = ""
        try:
            # a refused tool call names why in ``detail`` (activities/tool_call.py)
            content = json.loads(block.content)
            reason = str(content.get("detail") or content.get("reason") or "")
        except (ValueError, AttributeError):
            pass
        suffix = f": {reason}" if reason else ""
        # the call as the request replays it (a result's frame names only its call id)
        call_id = block.item_id.removeprefix("tool-result:")
        name = f"tool:{view.calls[call_id][0]} call:{call_id}" if call_id in view.calls \
            else block.citation
        out.append(f"`{name}` ended with status {block.status}{suffix}")
    return out


def _answer(request: Request, before: dict[str, list[str]] | None,
            now: dict[str, list[str]]) -> str:
    """What the revision says about one request: "Addressed" only when the request's
    section changed — new quoted text or citations against the revision it revises — and,
    for a request that named things, a new finding quotes one of them; otherwise which
    request found no evidence, plainly."""
    comment, topic = request.comment, request.topic
    if topic is None:
        return ("- Could not address from the admitted evidence: "
                f"{comment} (it names no topic or identifier of this job to research)")
    names = ", ".join(f"`{t}`" for t in request.terms)
    key, heading = _section_key(topic), topic_heading(topic)
    new = [line for line in now.get(key, []) if before is None or
           line not in before.get(key, [])]
    if before is None:
        return (f"- Not confirmed as addressed: {comment} (the revision this one revises "
                "was not in the request, so no change can be shown)")
    if request.terms:
        hits = [line for line in new
                if any(t.casefold() in line.split('" — `')[0].casefold()
                       for t in request.terms)]
        if hits:
            return f"- Addressed (see {heading}): {comment}"
        return ("- Could not address from the admitted evidence: "
                f"{comment} (searched the declared sources for {names}: no evidence "
                f"found; section {heading} is unchanged by this request)")
    if new:
        return f"- Addressed (see {heading}): {comment}"
    return ("- Could not address from the admitted evidence: "
            f"{comment} (no new evidence for {heading}; that section is unchanged)")


def compose(view: RequestView) -> str:
    brief = read_brief(view.trusted)
    requests = review_requests(review_comments(view, brief), brief.topics)
    extra: dict[str, list[str]] = {}
    for request in requests:
        if request.topic is not None:
            extra.setdefault(request.topic, []).extend(request.terms)
    findings, flagged = collect(view, brief, extra)
    title = brief.question or "Research draft"
    out = [f"# {title}", "", PREAMBLE, ""]
    cited: list[str] = []
    uncovered: list[str] = []
    for topic, _terms in brief.topics:
        mine = [f for f in findings if f.topic == topic]
        if topic in brief.missing:
            continue
        if not mine:
            uncovered.append(topic)
            continue
        out += [f"## {topic_heading(topic)}", ""]
        for f in mine:
            note = UNTRUSTED_NOTE if f.untrusted else ""
            out.append(f"- \"{f.quote}\" — `{f.citation}`{note}")
            base = _RANGE.match(f.citation)
            cited.append(base.group("base") if base else f.citation)
        out.append("")
    out += ["## Missing evidence", ""]
    if brief.missing:
        out += [f"- {t}: no admitted evidence; this draft makes no claim about it."
                for t in brief.missing]
    else:
        out.append("- None: every required topic has admitted evidence.")
    out += ["", "## Open items", ""]
    items = [f"- {t}: evidence was admitted but no line quotes its search terms."
             for t in uncovered]
    items += [f"- {t}: find evidence before publishing." for t in brief.missing]
    items += [f"- `{c}` contains instruction-like text; it was treated as data and not "
              "followed." for c in flagged]
    items += [f"- Acquisition {t}." for t in _failed_tools(view)]
    out += items or ["- None."]
    if requests:
        out += ["", "## Review comments", ""]
        before = previous_draft(view)
        now = _sections("\n".join(out))
        for request in requests:
            out.append(_answer(request, before, now))
    out += ["", "## Sources", ""]
    out += [f"- `{c}`" for c in dict.fromkeys(cited)] or ["- None quoted."]
    return "\n".join(out) + "\n"


class ExtractiveProvider:
    """Deterministic, offline; see the module docstring."""

    name = NAME
    #: Composing runs here, on this machine's CPU: a worker may run it in a helper process
    #: (``activities.offload``). Remote providers wait on the network and stay in the worker.
    cpu_bound = True

    def __init__(self, model: str = MODEL) -> None:
        self.model = model

    async def complete(
        self, payload: dict[str, Any], *, adapter: str, purpose: str
    ) -> ProviderResult:
        view = read_request(payload, adapter)
        text = compose(view)
        counter = default_counter()
        return ProviderResult(
            text=text,
            input_tokens=get_adapter(adapter).count_tokens(payload, counter),
            output_tokens=counter.count_text(text),
            model=self.model,
            provider=NAME,
        )
