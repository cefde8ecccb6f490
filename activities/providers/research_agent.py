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
It then works on the first topic still needing a note:

1. visible ``read`` results showing a quotable line with one of the topic's terms, not yet
   noted → ``note`` that line verbatim, citing that read's call id and line (one note per
   read, up to two, in parallel);
2. else visible ``search`` hits for the topic's terms → ``read`` a few lines around up to
   two of them (different files, different sources first);
3. else the (term, source) pairs not yet searched → ``search`` them (parallel calls);
4. else the topic is exhausted → ``update_plan`` marking it ``[-]`` with the sources it
   was searched in (a refused note in the last turn exhausts it too), so later turns skip
   it even after its results are cleared — until a source is added.

A topic needs one note, plus one per reviewer comment naming it (or one of its terms);
backticked words in such a comment are searched as extra terms. With nothing left it
updates the plan and calls ``finish`` naming the exhausted topics as open items. Quotes go
through ``extractive.fragments``, so instruction-like text is never copied into a note.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from activities.providers.base import ProposedToolCall, ProviderDecision
from activities.providers.extractive import (
    ExtractiveProvider,
    fragments,
    read_brief,
    review_comments,
)
from activities.providers.payload import RequestView, read_request
from activities.research_tools.source_tools import search_hits
from context.seal.adapters import get_adapter
from context.tokens import canonical_json, default_counter

NAME = "extractive"
AGENT_MODEL = "research-agent-v1"
#: at most this many searches per turn, and reads around this many hits
MAX_SEARCHES_PER_TURN = 6
MAX_READS_PER_TURN = 2
#: lines read on each side of a hit
READ_CONTEXT = 3

_SOURCE = re.compile(r"^- (?P<name>\S+) \((?P<kind>git|document|web_page)\b")
_NOTE_ID = re.compile(r"^note:(?P<topic>.+):(?P<call>t\d{4}-\d+)#\d+$")
_TURN = re.compile(r"^t(?P<turn>\d{4})-\d+$")
_BACKTICKED = re.compile(r"`([^`\n]{2,60})`")


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
                   sources=_sources(view.trusted), comments=review_comments(view, brief))
    for block in view.blocks:
        if block.role == "tool_result" and block.item_id.startswith("tool-result:"):
            tool = block.citation.split(" ", 1)[0].removeprefix("tool:")
            try:
                content = json.loads(block.content)
            except ValueError:
                continue  # withheld or redacted by policy: nothing to act on
            if isinstance(content, dict):
                call_id = block.item_id.removeprefix("tool-result:")
                seen.results.append(Seen(call_id, tool, block.status or "", content))
                if tool == "note" and content.get("accepted") is True:
                    # a note still shown by its own exchange (the ledger takes it over
                    # once the exchange has aged out of the verbatim turns)
                    topic = str(content.get("topic"))
                    seen.notes.setdefault(topic, set()).add(call_id)
                    seen.noted_text.setdefault(topic, set()).add(
                        " ".join(str(content.get("claim", "")).split()))
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
    return seen


def _noted(line: str, noted: set[str]) -> bool:
    """Whether ``line`` was quoted by a note (the ledger shows long lines cut short)."""
    text = " ".join(line.split())
    return any(text.startswith(quoted) for quoted in noted if quoted)


def _mentions(comment: str, topic: str, terms: list[str]) -> bool:
    lowered = comment.casefold()
    return any(word.casefold() in lowered for word in (topic, *terms))


class Agent:
    """One turn's decision over a ``Picture`` (pure: same picture, same calls)."""

    def __init__(self, seen: Picture) -> None:
        self.seen = seen

    def terms(self, topic: str, terms: list[str]) -> list[str]:
        extra = [word for comment in self.seen.comments if _mentions(comment, topic, terms)
                 for word in _BACKTICKED.findall(comment)]
        return list(dict.fromkeys([*terms, *extra]))

    def needed(self, topic: str, terms: list[str]) -> int:
        return 1 + sum(_mentions(c, topic, terms) for c in self.seen.comments)

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
                and len(self.seen.notes.get(topic, ())) < self.needed(topic, terms)]

    def plan(self, marks: dict[str, str]) -> str:
        lines = ["# Research plan (kept by the research agent)", "",
                 f"Question: {self.seen.question}", ""]
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
        return "\n".join(lines) + "\n"

    def decide(self) -> list[tuple[str, dict[str, Any]]]:
        pending = self.pending()
        if not pending:
            open_items = [f"{topic}: no evidence found in the declared sources"
                          for topic in sorted(self.exhausted())]
            note_count = sum(len(v) for v in self.seen.notes.values())
            return [("update_plan", {"text": self.plan({})}),
                    ("finish", {"summary": f"{note_count} cited notes over "
                                           f"{len(self.seen.topics)} topics.",
                                "open_items": open_items})]
        topic, terms = pending[0]
        terms = self.terms(topic, terms)
        lowered = [t.casefold() for t in terms]
        last_turn = max((r.turn for r in self.seen.results), default=0)
        if any(r.turn == last_turn and r.tool_name == "note" and r.status == "error"
               for r in self.seen.results):
            return [("update_plan", {"text": self.plan({topic: "-"})})]
        quoted = self.seen.noted_text.get(topic, set())
        notes = self._notes(topic, lowered, quoted)
        if notes:
            return notes
        reads = self._reads(lowered, quoted)
        if reads:
            return reads
        searched = {(r.content.get("source"), str(r.content.get("query", "")).casefold())
                    for r in self.seen.results if r.tool_name == "search"}
        searches = [("search", {"source": source, "query": term})
                    for term in terms for source in self.seen.sources
                    if (source, term.casefold()) not in searched]
        if searches:
            return searches[:MAX_SEARCHES_PER_TURN]
        return [("update_plan", {"text": self.plan({topic: "-"})})]

    def _notes(self, topic: str, lowered: list[str],
               quoted: set[str]) -> list[tuple[str, dict[str, Any]]]:
        """One note per visible read (newest first) that shows a quotable line with a term,
        so a topic read in several files is noted from each of them in one turn."""
        notes: list[tuple[str, dict[str, Any]]] = []
        claims: set[str] = set()
        for result in reversed(self.seen.results):
            if result.tool_name != "read" or result.status != "success":
                continue
            line = self._quotable(result.content["lines"], lowered, quoted | claims)
            if line is None:
                continue
            index, quote = line
            claims.add(quote)
            number = result.content["start_line"] + index
            notes.append(("note", {"topic": topic, "claim": quote, "citations": [{
                "call_id": result.call_id, "source": result.content["source"],
                "revision": result.content["revision"], "path": result.content["path"],
                "start_line": number, "end_line": number}]}))
            if len(notes) == MAX_READS_PER_TURN:
                break
        return notes

    @staticmethod
    def _quotable(lines: list[str], lowered: list[str],
                  noted: set[str]) -> tuple[int, str] | None:
        for index, line in enumerate(lines):
            if _noted(line, noted) or not any(t in line.casefold() for t in lowered):
                continue
            pieces = fragments(line)
            if pieces and len(pieces) == 1 and pieces[0] in line:
                return index, pieces[0]
        return None

    def _reads(self, lowered: list[str], noted: set[str]) -> list[tuple[str, dict[str, Any]]]:
        shown = {(r.content["source"], r.content["path"], number)
                 for r in self.seen.results if r.tool_name == "read" and r.status == "success"
                 for number in range(r.content["start_line"], r.content["end_line"] + 1)}
        # candidate hits in result order, at most one per file
        candidates: list[tuple[str, dict[str, Any]]] = []
        files: set[tuple[str, str]] = set()
        for result in self.seen.results:
            if result.tool_name != "search" or result.status != "success":
                continue
            source = result.content["source"]
            for path, _revision, line, text in search_hits(result.content):
                key = (source, path)
                if ((source, path, line) in shown or key in files or _noted(text, noted)
                        or not any(t in text.casefold() for t in lowered)
                        or not fragments(text)):
                    continue
                files.add(key)
                candidates.append((source, {"path": path, "line": line}))
        # one per source first, so a topic is read in as many sources as turns allow
        by_source: list[tuple[str, dict[str, Any]]] = []
        for source in dict.fromkeys(source for source, _ in candidates):
            by_source.append(next(c for c in candidates if c[0] == source))
        chosen = (by_source + [c for c in candidates if c not in by_source])
        return [("read", {"source": source, "path": hit["path"],
                          "start_line": max(1, hit["line"] - READ_CONTEXT),
                          "end_line": hit["line"] + READ_CONTEXT})
                for source, hit in chosen[:MAX_READS_PER_TURN]]


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
