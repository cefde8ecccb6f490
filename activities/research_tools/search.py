"""The ``search`` tool: the lines of a declared source that contain a query
(case-insensitive), or match it as a regular expression.

Search is one engine for every source kind — the ``regex`` module, case-insensitive — so a
literal and a pattern mean the same over a repository, a folder and a page. Every hit line
a search showed may be cited by a note, at the path and revision its file was read at.
Matching spends the call's ``CallBudget`` of regex time in a worker thread, with the
``regex`` module releasing the interpreter lock while it matches (SECURITY.md, "A tool
call cannot hold a worker"); a call that spends it is refused with
``arguments_over_limit`` saying so, and files past the byte budget are named in the
result, never dropped silently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import regex
from pydantic import Field

from activities.call_budget import CallBudget
from activities.research_tools.arguments import MAX_HITS, MAX_QUERY_CHARS, Arguments
from activities.research_tools.hit_lines import hit_line
from activities.research_tools.source_files import SourceFiles, confine
from activities.research_tools.source_tools import SourceTool
from activities.tool_errors import ToolRejected

#: a search result names at most this many of the files its limits kept it from reading
MAX_SKIPPED_SHOWN = 20


class SearchArguments(Arguments):
    """Find the lines of a declared source that contain the query (case-insensitive), or
    match it as a regular expression; each hit has its path, line number and revision."""

    source: str = Field(min_length=1, max_length=64, description="a declared source's name")
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    regex: bool = Field(default=False, description="treat query as a regular expression")
    paths: list[str] = Field(default_factory=list, max_length=20,
                             description="limit the search to these files or folders")


def search_hits(content: Mapping[str, Any]) -> Iterator[tuple[str, str, int, str]]:
    """Every hit of a stored ``search`` result: (path, revision, line number, text)."""
    for hit_file in content["files"]:
        for number, text in hit_file["lines"]:
            yield hit_file["path"], hit_file["revision"], number, text


class SearchTool(SourceTool):
    name = "search"
    arguments = SearchArguments

    async def over(self, files: SourceFiles, arguments: Any) -> dict[str, Any]:
        try:
            pattern = regex.compile(arguments.query if arguments.regex
                                    else regex.escape(arguments.query), regex.IGNORECASE)
        except regex.error as exc:
            raise ToolRejected("malformed_arguments",
                               f"search.query is not a valid pattern: {exc}") from None
        budget = CallBudget()  # one per call: every line and file it touches shares it
        selected = _selected(files, arguments.paths)
        await files.prefetch(selected, budget)
        # reading, decoding and matching block: one worker thread for the whole scan
        result = await asyncio.to_thread(_scan, files, arguments, pattern, selected, budget)
        if budget.skipped:  # what a limit kept out is named, never dropped silently
            result["skipped"] = [{"path": path, "reason": reason}
                                 for path, reason in budget.skipped[:MAX_SKIPPED_SHOWN]]
            result["skipped_count"] = len(budget.skipped)
        return result

    def citable_lines(self, arguments: Mapping[str, Any], content: Mapping[str, Any],
                      source: str, revision: str, path: str) -> dict[int, str]:
        if arguments.get("source") != source:
            return {}
        return {number: text for hit_path, hit_revision, number, text in search_hits(content)
                if hit_path == path and hit_revision == revision}


def _selected(files: SourceFiles, scopes: Sequence[str]) -> list[str]:
    if not scopes:
        return files.paths()
    chosen: list[str] = []
    for scope in (confine(s) for s in scopes):
        inside = [p for p in files.paths() if p == scope or p.startswith(f"{scope}/")]
        if not inside:
            raise ToolRejected("path_outside_source",
                               f"{files.name}:{scope} is no file or folder of this source")
        chosen += [p for p in inside if p not in chosen]
    return sorted(chosen)


def _scan(files: SourceFiles, arguments: SearchArguments, pattern: regex.Pattern[str],
          selected: Sequence[str], budget: CallBudget) -> dict[str, Any]:
    """The search itself, in a worker thread, within ``budget``'s regex time."""
    files_hit: list[dict[str, Any]] = []
    count = 0
    truncated = False
    searched = 0
    for path in selected:
        try:
            revision, lines = files.load(path, budget)
        except ToolRejected:
            continue  # binary files hold no searchable lines; limits are in the budget
        searched += 1
        shown: list[list[Any]] = []
        for number, line in enumerate(lines, start=1):
            try:
                # concurrent: the lock is released while matching, so the event loop runs
                found = pattern.search(line, timeout=budget.regex_left(), concurrent=True)
            except TimeoutError:
                raise ToolRejected(
                    "arguments_over_limit",
                    f"search.query used the call's {budget.regex_seconds:g} s of regex time "
                    f"(stopped in file {searched} of {len(selected)}, {count} hits so far); "
                    "use a simpler pattern or fewer paths") from None
            if found is None:
                continue
            if count == MAX_HITS:
                truncated = True
                break
            count += 1
            shown.append([number, hit_line(line)])  # never inside a secret
        if shown:
            files_hit.append({"path": path, "revision": revision, "lines": shown})
        if truncated:
            break
    # hits grouped by file: a file's path and revision once, then [line number, text]
    # pairs — the result is resent every turn it stays verbatim, and half of a hit list
    # written hit by hit was the same path and 40-character revision again
    return {"source": files.name, "query": arguments.query, "regex": arguments.regex,
            "files_searched": searched, "hit_count": count, "files": files_hit,
            "truncated": truncated}
