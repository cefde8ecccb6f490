"""The offline research agent: deterministic tool calls decided only from the sealed request.

What it sees is what a remote model would see — the serialized payload, read back with
``payload.read_request`` — and nothing else: no store, no files, no memory between turns.
So what assembly keeps or drops changes what it does: a search result the engine compacted
away is searched again; a note the budget left out is noted again.

From the task text it takes the topics and their terms, the declared sources and the
reviewers' requested changes; from data blocks the tool results of the turns the request
still shows (``tool-result:<call id>``; a recent note is one of them), the older notes (the
ledger: the newest aged notes line by line, ``notes:<job>:<n>``, each naming its topic and
evidence item ``note:<topic>:<call id>#<n>``, and an index of older ones per topic,
``notes-index:<job>``; see ``activities.candidates``) and its own plan (``agent_plan``).
Every topic still needing a note takes its next step in the same turn, side by side up to
the runtime's call limit (``call_limit``: 8 by default; a lower one is learnt from the
``too_many_calls`` refusal that names it and kept in the plan), so a job takes as many turns
as its slowest topic, not the sum of them. A topic's next step:

1. visible ``read`` results showing a quotable line with one of the topic's terms, not yet
   noted → ``note`` the most informative such line verbatim (of a paragraph too long to
   quote whole, its first sentence with a term; ``salience``: a definition
   with its value, then a docstring or comment, then a use; a bare header or an export
   list entry last), citing it and the adjacent lines after it that also define or
   explain a term (one note per read, up to three), widened to the whole sentences or
   statements those lines start or end as far as the read shows them (``passages``: a
   wrapped sentence is cited whole, so the draft can quote it whole) — but only once the topic's own
   searches are done, and never while a search hit not yet read promises a better line;
2. else the (term, source) pairs not yet searched → ``search`` them; a term is not searched
   again where a visible, complete search (not truncated, nothing skipped) of a query it
   contains already shows its every line;
3. else visible ``search`` hits for the topic's terms → ``read`` one line before and three
   after the best of them (a note cites its line and those after it): the best hit of
   every source first (so each declared source holding a term is read), then the best of
   every term in every source, then the next best elsewhere, up to three — a hit another
   topic's read of this turn covers is not read twice;
4. else the topic is exhausted → ``update_plan`` marking it ``[-]`` with the sources it
   was searched in (a refused note in the last turn exhausts it too), so later turns skip
   it even after its results are cleared — until a source is added.

A turn whose notes leave no topic pending also writes the plan and calls ``finish``: the
turn after it would do nothing else (a note the runtime refuses then stops the job for a
human, as the topic it exhausts would one turn later).

A reviewer's comment is a research request (``extractive.review_requests``): the names it
gives — backticked or quoted words, dotted, snake_case, CamelCase and UPPER_CASE
identifiers — become the search terms of the topic it names (or of the topic sharing most
words with it), until a note quotes one of them or the plan marks the request ``no
evidence`` (then ``finish`` lists it as an open item). A comment that gives no names asks
for one more note on its topic. With nothing left it updates the plan and calls ``finish``
naming the exhausted topics and requests as open items. Quotes go through
``extractive.fragments``, so instruction-like text is never copied into a note.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from activities.providers import salience
from activities.providers.base import ProposedToolCall, ProviderDecision
from activities.providers.extractive import (
    MAX_QUOTE_CHARS,
    ExtractiveProvider,
    Request,
    fragments,
    read_brief,
    review_comments,
    review_requests,
)
from activities.providers.passages import layout, passages
from activities.providers.payload import RequestView, read_request
from activities.providers.salience import question_words
from activities.research_tools.search import search_hits
from context import FOLD_PREFIX, LOG_PREFIX, canonical_json, default_counter, get_adapter

NAME = "extractive"
AGENT_MODEL = "research-agent-v1"
#: at most this many searches per turn, reads around this many hits, notes from this many
#: reads; a note cites at most ``NOTE_SPAN`` adjacent lines
MAX_SEARCHES_PER_TURN = 6
MAX_READS_PER_TURN = 3
#: the runtime's default limit of calls per turn (``ResearchSpec.max_calls_per_turn``); a
#: job with a lower one refuses the rest, and the refusal names it (``call_limit``)
MAX_CALLS_PER_TURN = 8
MAX_NOTES_PER_TURN = 3
NOTE_SPAN = 3
#: a note widens its lines to a whole sentence of at most this many lines
MAX_SENTENCE_LINES = 6
#: a plan longer than this keeps only what the notes do not say (the runtime refuses a
#: call's arguments over ``contracts.activity_messages.MAX_TOOL_ARGUMENT_CHARS`` of JSON)
PLAN_MAX_CHARS = 3_000
#: a line this informative (a definition, the term as written) is noted wherever seen
STRONG = salience.DEFINITION * 4 + 5  # whole word, as written, at module level
#: how much of a note's quoted lines the notes ledger shows (``activities.candidates``)
LEDGER_QUOTE_CHARS = 100
#: lines read before and after a hit: a note cites its best line and the lines after it
#: (a header's docstring, the adjacent definitions), never the ones before — a line before
#: that holds a term is a hit of its own
READ_BEFORE = 1
READ_AFTER = NOTE_SPAN

_SOURCE = re.compile(r"^- (?P<name>\S+) \((?P<kind>git|document|web_page)\b")
_NOTE_ID = re.compile(r"^note:(?P<topic>.+):(?P<call>t\d{4}-\d+)#\d+$")
_TURN = re.compile(r"^t(?P<turn>\d{4})-\d+$")
_BACKTICKED = re.compile(r"`([^`\n]{2,60})`")
_AT_MOST = re.compile(r"at most (\d+) per turn")
_PLAN_LIMIT = re.compile(r"^Calls per turn: at most (\d+)$", re.MULTILINE)
_HITS = re.compile(r"\((\d+) hits\)$")
_FOLD_SEARCHED = re.compile(r"^Searched in (?P<source>\S+): (?P<queries>.+)$")
_FOLD_NOTE = re.compile(r'^- (?P<topic>.+?): (?P<call>t\d{4}-\d+) (?P<claim>"(?:[^"\\]|\\.)*") \(')
#: an MCP tool's name, the plan's line for one called, and a ``name=value`` in the question
MCP_PREFIX = "mcp__"
_MCP_CALLED = re.compile(r"^- \[mcp\] (\S+) called$", re.MULTILINE)
_ASSIGNED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=(\S+)")


@dataclass(frozen=True)
class Seen:
    """One tool result the request shows."""

    call_id: str
    tool_name: str
    status: str
    content: dict[str, Any]

    @property
    def turn(self) -> int:
        m = _TURN.match(self.call_id)
        return int(m.group("turn")) if m else 0


@dataclass
class Picture:
    """Everything the agent knows this turn, all of it read from the request."""

    question: str
    topics: list[tuple[str, list[str]]]
    sources: list[str]
    comments: list[str]
    results: list[Seen] = field(default_factory=list)
    notes: dict[str, set[str]] = field(default_factory=dict)  # topic -> note call ids
    noted_text: dict[str, set[str]] = field(default_factory=dict)  # topic -> quoted lines
    plan: str = ""
    #: (source, query casefolded) searched, as the research log and its fold state them
    searched: set[tuple[str, str]] = field(default_factory=set)
    #: the same, with the hit count of every logged or folded occurrence
    logged_hits: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    #: the MCP tools the request offers (docs/mcp.md): name -> (description, schema)
    tools: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)


def _sources(trusted: list[str]) -> list[str]:
    names: list[str] = []
    for text in trusted:
        in_sources = False
        for line in text.splitlines():
            if line.strip() == "Required sources:":
                in_sources = True
            elif in_sources and (m := _SOURCE.match(line)):
                names.append(m.group("name"))
            elif in_sources and not line.startswith("- "):
                in_sources = False
    return list(dict.fromkeys(names))


def picture(view: RequestView) -> Picture:
    brief = read_brief(view.trusted)
    seen = Picture(question=brief.question or "", topics=brief.topics,
                   sources=_sources(view.trusted), comments=review_comments(view, brief),
                   tools={name: tool for name, tool in view.tools.items()
                          if name.startswith(MCP_PREFIX)})
    for block in view.blocks:
        if block.role == "tool_result" and block.item_id.startswith("tool-result:"):
            call_id = block.item_id.removeprefix("tool-result:")
            # the tool and its arguments are the replayed call's (a result's frame names
            # only its call); a frame sealed before that said ``source="tool:<name> …"``
            tool, arguments = view.calls.get(call_id, (
                block.citation.split(" ", 1)[0].removeprefix("tool:"), {}))
            try:
                content = json.loads(block.content)
            except ValueError:
                continue  # withheld or redacted by policy: nothing to act on
            if isinstance(content, dict):
                seen.results.append(Seen(call_id, tool, block.status or "", content))
                if tool == "note" and content.get("accepted") is True:
                    # a note still shown by its own exchange (the ledger takes it over
                    # once the exchange has aged out of the verbatim turns); its result
                    # acknowledges it, the claim is the call's
                    topic = str(content.get("topic"))
                    claim = arguments.get("claim", content.get("claim", ""))
                    seen.notes.setdefault(topic, set()).add(call_id)
                    seen.noted_text.setdefault(topic, set()).add(" ".join(str(claim).split()))
        elif m := _NOTE_ID.match(block.item_id):
            seen.notes.setdefault(m.group("topic"), set()).add(m.group("call"))
            seen.noted_text.setdefault(m.group("topic"), set()).update(
                line.strip() for line in block.content.split("\n"))
        elif block.item_id.startswith("notes-index:"):
            for line in block.content.split("\n")[1:]:
                topic, _, rest = line.removeprefix("- ").rpartition(": ")
                ids = rest.partition("(")[2].rstrip(")").split(", ")
                # a note with several citations has an evidence id per citation
                seen.notes.setdefault(topic, set()).update(i.split("#")[0] for i in ids if i)
        elif block.item_id.startswith("notes:"):
            for line in block.content.split("\n")[1:]:
                parts = line.removeprefix("- ").split(" | ", 4)
                if len(parts) == 5 and (m := _NOTE_ID.match(parts[2])):
                    seen.notes.setdefault(parts[0], set()).add(m.group("call"))
                    seen.noted_text.setdefault(parts[0], set()).add(parts[4].strip())
        elif block.item_id.startswith("agent_plan:"):
            seen.plan = block.content
        elif block.item_id.startswith(LOG_PREFIX):
            for line in block.content.split("\n"):
                _log_line(seen, line)
        elif block.item_id.startswith(FOLD_PREFIX):
            _fold_block(seen, block.content)
    return seen


def _log_line(seen: Picture, line: str) -> None:
    """One line of the research log (``context.tools.fold.log_line``): ``<call id> <tool>
    <arguments> [cites …] -> <status>`` — what was searched and noted, once the result
    itself has left the request. A logged read is not taken as seen: its lines have left
    the request, and a note needs them shown again."""
    call_id, _, rest = line.partition(" ")
    tool, _, rest = rest.partition(" ")
    try:
        arguments, end = json.JSONDecoder().raw_decode(rest)
    except ValueError:
        return
    outcome = rest[end:].rpartition(" -> ")[2].strip()
    if not isinstance(arguments, dict) or outcome.split(" ")[0] != "success":
        return
    if tool == "search":
        _searched(seen, str(arguments.get("source")), str(arguments.get("query")), outcome)
    elif tool == "note" and _TURN.match(call_id):
        topic = str(arguments.get("topic"))
        seen.notes.setdefault(topic, set()).add(call_id)
        seen.noted_text.setdefault(topic, set()).add(_unclipped(str(arguments.get("claim", ""))))


def _searched(seen: Picture, source: str, query: str, outcome: str) -> None:
    key = (source, query.casefold())
    seen.searched.add(key)
    if m := _HITS.search(outcome):
        seen.logged_hits.setdefault(key, []).append(int(m.group(1)))


def _unclipped(text: str) -> str:
    """A claim as the log or a fold shows it: a long one is cut and ends with ``…``
    (``_noted`` then matches its start)."""
    return " ".join(text.split())


def _fold_block(seen: Picture, text: str) -> None:
    """The fold (``context.tools.fold.fold_text``): queries searched per source and the
    accepted notes by topic with their claims."""
    for line in text.split("\n"):
        if m := _FOLD_SEARCHED.match(line):
            for entry in m.group("queries").split(" | "):
                try:
                    query, end = json.JSONDecoder().raw_decode(entry)
                except ValueError:
                    continue
                _searched(seen, m.group("source"), str(query), entry[end:])
        elif m := _FOLD_NOTE.match(line):
            topic = m.group("topic")
            seen.notes.setdefault(topic, set()).add(m.group("call"))
            try:
                claim = str(json.loads(m.group("claim")))
            except ValueError:
                continue
            seen.noted_text.setdefault(topic, set()).add(_unclipped(claim))


def _noted(line: str, noted: set[str]) -> bool:
    """Whether ``line`` was quoted by a note (the ledger shows long lines cut short)."""
    text = " ".join(line.split())
    # a quote as long as the ledger's cut may be a longer line cut short; a shorter one
    # must be the whole line (a line that merely starts like a quoted one is not noted)
    return any(text == quoted or (len(quoted) >= LEDGER_QUOTE_CHARS and text.startswith(quoted))
               or (quoted.endswith("…") and text.startswith(quoted[:-1]))
               or (len(text) >= 12 and text in quoted) for quoted in noted if quoted)


def _quote(line: str, lowered: list[str], noted: set[str]) -> str | None:
    """What a note quotes of ``line`` (``extractive.fragments``, verbatim): the line's one
    quotable piece, or — a line too long to quote whole, split into sentences, as a web
    page's paragraph is — its first sentence holding a term not yet noted. ``None`` when
    the line holds no term, or no such piece. Without the sentence rule a topic whose
    term only a long paragraph holds (a live page's text is a paragraph per line) would
    find nothing to quote and end exhausted."""
    if _noted(line, noted) or not any(t in line.casefold() for t in lowered):
        return None
    pieces = [p for p in fragments(line) if p in line]
    if len(pieces) == 1:
        return pieces[0] if not _noted(pieces[0], noted) else None
    return next((p for p in pieces if any(t in p.casefold() for t in lowered)
                 and not _noted(p, noted)), None)


def _whole_sentences(lines: list[str], first: int, last: int, path: str) -> tuple[int, int]:
    """Lines ``first``..``last`` of a read widened to whole sentences and statements
    (``passages``) as far as the read shows them: a note citing one wrapped line of a
    sentence gave the draft half a sentence to quote."""
    wide_first, wide_last = first, last
    for passage in passages(lines, layout(path), MAX_QUOTE_CHARS):
        # only the sentences the chosen lines start or end (their neighbours' sentences
        # sharing a line would otherwise chain the widening across the paragraph)
        if passage.start <= last and passage.end >= first and passage.end - passage.start < \
                MAX_SENTENCE_LINES:
            wide_first, wide_last = min(wide_first, passage.start), max(wide_last, passage.end)
    return wide_first, wide_last


def _request_line(request: Request) -> str:
    """The plan's line for a request the declared sources hold no evidence for."""
    names = ", ".join(request.terms)
    return f"- [-] {request.topic} request: no evidence for {names}"


def _mentions(comment: str, topic: str, terms: list[str]) -> bool:
    lowered = comment.casefold()
    return any(word.casefold() in lowered for word in (topic, *terms))


class Agent:
    """One turn's decision over a ``Picture`` (pure: same picture, same calls)."""

    def __init__(self, seen: Picture) -> None:
        self.seen = seen
        self.exact: list[str] = []  # the current topic's terms as written
        #: reads this turn already asks for: (source, path, start, end)
        self.reading: list[tuple[str, str, int, int]] = []
        #: the last ``_reads`` found only hits another topic's read this turn covers
        self.waiting = False
        #: the MCP tools this turn calls
        self.calling: list[str] = []

    def requests(self, topic: str) -> list[Request]:
        return [r for r in review_requests(self.seen.comments, self.seen.topics)
                if r.topic == topic]

    def open_request(self, topic: str) -> Request | None:
        """The first request on ``topic`` that names things no note has quoted yet and
        that the plan does not mark exhausted: its names are what the topic's next
        searches, reads and notes look for."""
        noted = " ".join(self.seen.noted_text.get(topic, set())).casefold()
        for request in self.requests(topic):
            if (request.terms and not any(t.casefold() in noted for t in request.terms)
                    and _request_line(request) not in self.seen.plan):
                return request
        return None

    def terms(self, topic: str, terms: list[str]) -> list[str]:
        request = self.open_request(topic)
        if request is not None:
            return list(request.terms)
        return list(terms)

    def needed(self, topic: str, terms: list[str]) -> int:
        """One note, plus one per request on the topic that names nothing of its own."""
        return 1 + sum(not r.terms for r in self.requests(topic))

    def exhausted(self) -> set[str]:
        """Topics the plan marks exhausted in every source declared now (a source added
        later re-opens them)."""
        done = set()
        for topic, _ in self.seen.topics:
            for line in self.seen.plan.splitlines():
                if line.startswith(f"- [-] {topic}: exhausted in "):
                    searched = set(line.split(" exhausted in ", 1)[1].split(", "))
                    if set(self.seen.sources) <= searched:
                        done.add(topic)
        return done

    def pending(self) -> list[tuple[str, list[str]]]:
        done = self.exhausted()
        return [(topic, terms) for topic, terms in self.seen.topics
                if topic not in done
                and (len(self.seen.notes.get(topic, ())) < self.needed(topic, terms)
                     or self.open_request(topic) is not None)]

    def plan(self, marks: dict[str, str]) -> str:
        lines = ["# Research plan (kept by the research agent)", "",
                 f"Question: {self.seen.question}", ""]
        if (limit := self.call_limit()) < MAX_CALLS_PER_TURN:
            lines[-1:-1] = [f"Calls per turn: at most {limit}"]
        exhausted = self.exhausted()
        for topic, terms in self.seen.topics:
            mark = marks.get(topic) or ("-" if topic in exhausted else None)
            count = len(self.seen.notes.get(topic, ()))
            if mark == "-":
                lines.append(f"- [-] {topic}: exhausted in {', '.join(self.seen.sources)}")
            elif mark == "x" or count >= self.needed(topic, terms):
                lines.append(f"- [x] {topic}: noted")
            else:
                lines.append(f"- [ ] {topic}: {count} note(s) so far")
            for request in self.requests(topic):
                line = _request_line(request)
                if line in self.seen.plan or marks.get(topic) == f"request:{line}":
                    lines.append(line)
        lines += [f"- [mcp] {name} called" for name in sorted(self.mcp_called())]
        text = "\n".join(lines) + "\n"
        if len(text) <= PLAN_MAX_CHARS:
            return text
        # a job of many topics: the noted and pending lines follow from the notes, only the
        # exhausted and unanswerable ones must be remembered (a plan over the runtime's
        # argument limit would be refused every turn)
        kept = [line for line in lines if not line.startswith(("- [x] ", "- [ ] "))]
        noted = sum(line.startswith("- [x] ") for line in lines)
        kept.append(f"{noted} topics noted, "
                    f"{sum(line.startswith('- [ ] ') for line in lines)} still open")
        return "\n".join(kept) + "\n"

    def mcp_called(self) -> set[str]:
        """The MCP tools called already: the plan's record, this turn's calls, a visible
        result (the plan is how the agent remembers once results age out)."""
        return ({*_MCP_CALLED.findall(self.seen.plan), *self.calling,
                 *(r.tool_name for r in self.seen.results if r.tool_name in self.seen.tools)})

    def mcp_calls(self) -> list[tuple[str, dict[str, Any]]]:
        """Each offered MCP tool the operator marks ``effect: read`` (its description says
        so), not called yet, whose required arguments the question fills — a ``name=value``
        in it for each (an integer or boolean parsed as its schema types it) — called once
        with exactly those arguments. Deterministic, from the sealed request only."""
        given = dict(_ASSIGNED.findall(self.seen.question))
        calls: list[tuple[str, dict[str, Any]]] = []
        for name, (description, schema) in sorted(self.seen.tools.items()):
            if "effect: read;" not in description or name in self.mcp_called():
                continue
            properties = schema.get("properties") or {}
            arguments: dict[str, Any] = {}
            for required in schema.get("required") or []:
                raw = given.get(str(required))
                kind = (properties.get(required) or {}).get("type", "string")
                if raw is None:
                    break
                if kind == "integer" and raw.lstrip("-").isdigit():
                    arguments[required] = int(raw)
                elif kind == "boolean" and raw in ("true", "false"):
                    arguments[required] = raw == "true"
                elif kind == "string":
                    arguments[required] = raw.rstrip(".,;)")
                else:
                    break
            else:
                calls.append((name, arguments))
        return calls

    def call_limit(self) -> int:
        """The most calls one turn asks for: the runtime's default, or the lower limit a
        visible refusal named (``too_many_calls: … at most N per turn``) — the request is
        all the agent knows, so it learns a job's own limit from the runtime's answer."""
        limit = MAX_CALLS_PER_TURN
        for result in self.seen.results:
            if result.status == "error" and result.content.get("error") == "too_many_calls":
                m = _AT_MOST.search(str(result.content.get("detail", "")))
                if m:
                    limit = min(limit, max(1, int(m.group(1))))
        # the refusal ages out of the turns the request shows; the plan keeps the limit
        if m := _PLAN_LIMIT.search(self.seen.plan):
            limit = min(limit, max(1, int(m.group(1))))
        return limit

    def decide(self) -> list[tuple[str, dict[str, Any]]]:
        pending = self.pending()
        if not pending:
            return self._finish()
        limit = self.call_limit()
        last_turn = max((r.turn for r in self.seen.results), default=0)
        # a refused note exhausts a topic: the first still pending (a refusal does not name
        # its topic; each one exhausts one, so a topic that keeps failing ends) — a call
        # past the turn's limit was never checked, so it exhausts nothing
        refused = any(r.turn == last_turn and r.tool_name == "note" and r.status == "error"
                      and r.content.get("error") != "too_many_calls"
                      for r in self.seen.results)
        calls: list[tuple[str, dict[str, Any]]] = self.mcp_calls()[:max(0, limit - 1)]
        self.calling = [name for name, _ in calls]
        marks: dict[str, str] = {}
        searching = False
        self.reading = []
        # every pending topic takes its next step in this same turn (searches, reads or
        # notes side by side, up to the call limit): topics advance together, so a job
        # takes as many turns as its slowest topic, not the sum of them
        for topic, terms in pending:
            room = limit - len(calls)
            if room <= 0:
                break
            request = self.open_request(topic)
            exhaust = f"request:{_request_line(request)}" if request else "-"
            if refused and topic == pending[0][0]:
                marks[topic] = exhaust
                continue
            step = self._step(topic, terms)
            if step is None:
                marks[topic] = exhaust
                continue
            if searching and step and all(name == "search" for name, _ in step):
                # one topic's searches a turn: searching every topic first filled many turns
                # with searches whose results were compacted away before they were read,
                # and then searched again
                continue
            searching = searching or any(name == "search" for name, _ in step)
            calls += step[:room]
        # a limit just learnt goes into the plan at once (the refusal will age out)
        learnt = limit < MAX_CALLS_PER_TURN and not _PLAN_LIMIT.search(self.seen.plan)
        if marks or learnt or self.calling:  # the plan takes the last place: what it
            # displaces comes next
            calls = [*calls[:limit - 1], ("update_plan", {"text": self.plan(marks)})]
        return self._maybe_finish(calls, limit)

    def _step(self, topic: str, terms: list[str]) -> list[tuple[str, dict[str, Any]]] | None:
        """The topic's next calls — notes, else searches, else reads — or None when it is
        exhausted."""
        terms = self.terms(topic, terms)
        self.exact = terms
        lowered = [t.casefold() for t in terms]
        quoted = self.seen.noted_text.get(topic, set())
        searches = [("search", {"source": source, "query": term})
                    for term in terms for source in self.seen.sources
                    if not self._answered(source, term)]
        # a read another topic asked for may show this topic's terms; it is noted before
        # this topic's own searches only when it already holds a definition as asked
        notes = self._mcp_notes(topic, lowered, quoted)
        notes = notes or self._notes(topic, lowered, quoted, strong_only=bool(searches))
        if notes:
            return notes
        if searches:
            return searches[:MAX_SEARCHES_PER_TURN]
        reads = self._reads(lowered, quoted)
        if reads or self.waiting:
            # a hit another topic's read this turn covers: this topic notes from that read
            # next turn, it is not exhausted
            return reads
        # searches whose hits left the request before they were read (a topic's searches
        # spread over several turns; only the last turn stays verbatim): asked once more
        return self._lost(terms) or None

    def _lost(self, terms: list[str]) -> list[tuple[str, dict[str, Any]]]:
        """The topic's searches the log says found something, not shown any more and not
        asked for again yet (a second logged occurrence ends it)."""
        shown = {(str(r.content.get("source")), str(r.content.get("query", "")).casefold())
                 for r in self.seen.results if r.tool_name == "search"}
        lost = [("search", {"source": source, "query": term})
                for term in terms for source in self.seen.sources
                if (counts := self.seen.logged_hits.get((source, term.casefold())))
                and len(counts) == 1 and counts[0] > 0
                and (source, term.casefold()) not in shown]
        return lost[:MAX_SEARCHES_PER_TURN]

    def _answered(self, source: str, term: str) -> bool:
        """Whether a visible search of ``source`` already shows every line holding
        ``term``: the same query, or a plain query contained in it whose result was
        complete (not truncated, every file searched, none skipped) — searching again
        would only repeat those hits."""
        wanted = term.casefold()
        if (source, wanted) in self.seen.searched:
            return True  # the log or its fold says so; the result itself has left
        full = max((int(r.content.get("files_searched") or 0) for r in self.seen.results
                    if r.tool_name == "search" and r.content.get("source") == source),
                   default=0)
        for result in self.seen.results:
            content = result.content
            if result.tool_name != "search" or content.get("source") != source:
                continue
            query = str(content.get("query", "")).casefold()
            if query == wanted:
                return True
            if (result.status == "success" and query and query in wanted
                    and not content.get("regex") and not content.get("truncated")
                    and not content.get("skipped_count")
                    and int(content.get("files_searched") or 0) == full):
                return True
        return False

    def _finish(self) -> list[tuple[str, dict[str, Any]]]:
        open_items = [f"{topic}: no evidence found in the declared sources"
                      for topic in sorted(self.exhausted())]
        open_items += [line.removeprefix("- [-] ") for line in self.seen.plan.splitlines()
                       if " request: no evidence for " in line]
        note_count = sum(len(v) for v in self.seen.notes.values())
        plan = self.plan({})
        finish = ("finish", {"summary": f"{note_count} cited notes over "
                                        f"{len(self.seen.topics)} topics.",
                             "open_items": open_items})
        if plan.strip() == self.seen.plan.strip():
            return [finish]  # the plan already says so
        if self.call_limit() < 2:
            return [("update_plan", {"text": plan})]  # finish comes next turn, on its own
        return [("update_plan", {"text": plan}), finish]

    def _maybe_finish(self, calls: list[tuple[str, dict[str, Any]]],
                      limit: int) -> list[tuple[str, dict[str, Any]]]:
        """``calls``, followed by the plan and ``finish`` when they are only notes (and a
        plan) after which no topic would be pending: the turn after them would do nothing
        else. A note the runtime refuses then stops the job for a human with that topic
        uncovered — as it would one turn later, when the refusal exhausts the topic."""
        if not calls or any(name not in ("note", "update_plan") for name, _ in calls):
            return calls
        future = Picture(question=self.seen.question, topics=self.seen.topics,
                         sources=self.seen.sources, comments=self.seen.comments,
                         notes={k: set(v) for k, v in self.seen.notes.items()},
                         noted_text={k: set(v) for k, v in self.seen.noted_text.items()},
                         plan=self.seen.plan)
        for index, (name, arguments) in enumerate(calls, start=1):
            if name == "note":
                topic = str(arguments["topic"])
                future.notes.setdefault(topic, set()).add(f"t9999-{index}")
                future.noted_text.setdefault(topic, set()).add(
                    " ".join(str(arguments["claim"]).split()))
            else:
                future.plan = str(arguments["text"])
        after = Agent(future)
        if after.pending():
            return calls
        notes = [c for c in calls if c[0] == "note"]
        finishing = after._finish()
        if len(notes) + len(finishing) > limit or finishing[-1][0] != "finish":
            return calls
        return [*notes, *finishing]

    def _notes(self, topic: str, lowered: list[str], quoted: set[str], *,
               strong_only: bool = False) -> list[tuple[str, dict[str, Any]]]:
        """One note per visible read (newest first) that shows a quotable line with a term:
        its most informative such line (``salience``), cited together with the neighbouring
        lines that also define or explain a term (two adjacent defaults are one note). A
        read is noted only when no search hit not yet read promises a better line
        (``_better_unread``): a bare header or a list entry is cited only for want of
        anything better."""
        notes: list[tuple[str, dict[str, Any]]] = []
        claims: set[str] = set()
        words = question_words(self.seen.question)
        for result in reversed(self.seen.results):
            if result.tool_name != "read" or result.status != "success":
                continue
            lines = result.content["lines"]
            best = self._quotable(lines, lowered, quoted | claims, words,
                                  result.content["path"])
            if best is None:
                continue
            index, quote, value = best
            if strong_only and value < STRONG:
                continue
            if self._better_unread(lowered, value, quoted):
                continue  # read the better hit first; this read stays for later
            claims.add(quote)
            first = last = index
            explained = salience.docstring_after(lines, index)
            if salience.score(lines[index], lowered) == salience.HEADER and explained:
                last = explained  # cite the header with its docstring's first sentence
            while last + 1 < len(lines) and last - first < NOTE_SPAN - 1 and salience.score(
                    lines[last + 1], lowered) >= salience.PROSE:
                last += 1
            first, last = _whole_sentences(lines, first, last, result.content["path"])
            start = result.content["start_line"]
            notes.append(("note", {"topic": topic, "claim": quote, "citations": [{
                "call_id": result.call_id, "source": result.content["source"],
                "revision": result.content["revision"], "path": result.content["path"],
                "start_line": start + first, "end_line": start + last}]}))
            if len(notes) == MAX_NOTES_PER_TURN:
                break
        return notes

    def _mcp_notes(self, topic: str, lowered: list[str],
                   quoted: set[str]) -> list[tuple[str, dict[str, Any]]]:
        """One note from the newest visible MCP result with a quotable line holding one of
        the topic's terms not yet noted: that line, cited by the call, the tool's name as
        source, the result's hash as revision and its line number."""
        for result in reversed(self.seen.results):
            content = result.content
            if (result.status != "success" or not result.tool_name.startswith(MCP_PREFIX)
                    or not isinstance(content.get("lines"), list)):
                continue
            for number, line in enumerate(content["lines"], start=int(content["start_line"])):
                claim = _quote(str(line), lowered, quoted)
                if claim is None:
                    continue
                return [("note", {"topic": topic, "claim": claim, "citations": [{
                    "call_id": result.call_id, "source": content["source"],
                    "revision": content["revision"], "path": content["path"],
                    "start_line": number, "end_line": number}]})]
        return []

    def _quotable(self, lines: list[str], lowered: list[str], noted: set[str],
                  words: frozenset[str] = frozenset(),
                  path: str = "") -> tuple[int, str, int] | None:
        """The most informative quotable line with a term (the first among equals)."""
        best: tuple[int, str, int] | None = None
        for index, line in enumerate(lines):
            if _noted(line, noted) or not any(t in line.casefold() for t in lowered):
                continue
            quote = _quote(line, lowered, noted)
            if quote is not None:
                value = salience.rank(line, lowered, words, path, self.exact)
                if salience.score(line, lowered) == salience.HEADER and \
                        salience.docstring_after(lines, index) is not None:
                    value = salience.PROSE * 4 + 3  # the header with what it explains
                if best is None or value > best[2]:
                    best = (index, quote, value)
        return best

    def _hits(self, lowered: list[str], noted: set[str]) -> list[tuple[int, str, str, int]]:
        """Search hits with a term not yet shown by a read nor noted, best first:
        (rank, source, path, line)."""
        shown = {(r.content["source"], r.content["path"], number)
                 for r in self.seen.results if r.tool_name == "read" and r.status == "success"
                 for number in range(r.content["start_line"], r.content["end_line"] + 1)}
        words = question_words(self.seen.question)
        found: dict[tuple[str, str, int], int] = {}
        for result in self.seen.results:
            if result.tool_name != "search" or result.status != "success":
                continue
            source = result.content["source"]
            for path, _revision, line, text in search_hits(result.content):
                key = (source, path, line)
                if (key in shown or key in found or _noted(text, noted)
                        or not any(t in text.casefold() for t in lowered)
                        or not fragments(text)):
                    continue
                found[key] = salience.rank(text, lowered, words, path, self.exact)
        ordered = sorted(found.items(), key=lambda kv: -kv[1])  # stable: result order
        return [(value, source, path, line) for (source, path, line), value in ordered]

    def _better_unread(self, lowered: list[str], value: int, noted: set[str]) -> bool:
        return any(rank > value for rank, *_ in self._hits(lowered, noted))

    def _reads(self, lowered: list[str], noted: set[str]) -> list[tuple[str, dict[str, Any]]]:
        """Reads around the best hits: the best of every source first (so each declared
        source holding a term is read), then the best of every term in every source (so a
        topic's second term is read where it is best said), then the next best
        elsewhere — another file, or the same file away from what is already chosen — up to
        ``MAX_READS_PER_TURN``. A hit another topic's read this turn covers counts as
        chosen and is not read twice."""
        hits = self._hits(lowered, noted)
        planned = {(s, p, n) for s, p, a, b in self.reading for n in range(a, b + 1)}
        chosen: list[tuple[str, str, int]] = []
        fresh: list[tuple[str, str, int]] = []

        def choose(source: str, path: str, line: int) -> None:
            if len(chosen) >= MAX_READS_PER_TURN or any(
                    s == source and p == path and abs(n - line) <= READ_BEFORE + READ_AFTER
                    for s, p, n in chosen):
                return
            chosen.append((source, path, line))
            if (source, path, line) not in planned:
                fresh.append((source, path, line))

        for source in dict.fromkeys(source for _v, source, _p, _l in hits):
            _v, _s, path, line = next(h for h in hits if h[1] == source)
            choose(source, path, line)
        for term in lowered:
            for source in dict.fromkeys(source for _v, source, _p, _l in hits):
                best = next((h for h in hits if h[1] == source
                             and term in self._hit_text(h)), None)
                if best is not None:
                    choose(best[1], best[2], best[3])
        for _value, source, path, line in hits:
            choose(source, path, line)
        self.waiting = bool(chosen) and not fresh
        reads = []
        for source, path, line in fresh:
            start, end = max(1, line - READ_BEFORE), line + READ_AFTER
            self.reading.append((source, path, start, end))
            reads.append(("read", {"source": source, "path": path,
                                   "start_line": start, "end_line": end}))
        return reads

    def _hit_text(self, hit: tuple[int, str, str, int]) -> str:
        _value, source, path, line = hit
        for result in self.seen.results:
            if result.tool_name == "search" and result.content.get("source") == source:
                for p, _revision, number, text in search_hits(result.content):
                    if p == path and number == line:
                        return text.casefold()
        return ""


def decide_offline(payload: dict[str, Any], adapter: str) -> ProviderDecision:
    """The research agent's calls for the request ``payload`` (see the module docstring)."""
    calls = Agent(picture(read_request(payload, adapter))).decide()
    proposed = [ProposedToolCall(provider_call_id=f"offline-{index}", name=name,
                                 arguments=arguments)
                for index, (name, arguments) in enumerate(calls, start=1)]
    counter = default_counter()
    return ProviderDecision(
        tool_calls=proposed,
        input_tokens=get_adapter(adapter).count_tokens(payload, counter),
        output_tokens=counter.count_text(canonical_json([[n, a] for n, a in calls])),
        model=AGENT_MODEL, provider=NAME, stop_reason="tool_calls",
    )


class OfflineProvider(ExtractiveProvider):
    """The offline default (provider ``extractive``): research turns are decided by the
    research agent above, drafts are composed extractively from the notes."""

    async def decide(self, payload: dict[str, Any], *, adapter: str) -> ProviderDecision:
        return decide_offline(payload, adapter)
