"""``run_source_tool``: one ``list``, ``search`` or ``read`` call over the job's sources.

The call's arguments are validated (``arguments``), its source must be one the job
declared and its paths must stay inside that source (``source_files``); only then is
anything read. The result is a JSON-able dict that names the source and the revision each
line was read at (a commit sha, or the file's content hash), so a note can cite exactly
what the model saw. Bad input raises ``ToolRejected``; the caller records it as an error
result for the model, never as a crash.

Search is one engine for every source kind — the ``regex`` module, case-insensitive — so
a literal and a pattern mean the same over a repository, a folder and a page.
(Repositories are still read only at the pinned commit, through ``git cat-file``.)

A call cannot hold its worker (SECURITY.md, "A tool call cannot hold a worker"): each call
has one ``CallBudget`` — ``MAX_REGEX_SECONDS`` of matching over all its lines and files,
``MAX_CALL_BYTES`` of content read — and its blocking part (reading files, decoding,
matching) runs in a worker thread, with the ``regex`` module releasing the interpreter lock
while it matches, so the event loop keeps heartbeating and serving the worker's other jobs
while a pathological pattern spends its two seconds. A call that spends its regex time is
refused with ``arguments_over_limit`` saying so; files past the byte budget are skipped and
named in the result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import regex

from activities.research_tools.arguments import (
    MAX_HITS,
    MAX_LIST_ENTRIES,
    MAX_READ_LINES,
    ListArguments,
    ReadArguments,
    SearchArguments,
    parse_arguments,
)
from activities.research_tools.budget import CallBudget
from activities.research_tools.hit_lines import hit_line
from activities.research_tools.rejected import RejectionKind, ToolRejected
from activities.research_tools.source_files import SourceFiles, confine, declared, open_source
from contracts.path_safety import PathRoots
from contracts.source_specs import SourceSpec

if TYPE_CHECKING:
    from activities.sources.web_revisions import WebPages


async def run_source_tool(tool_name: str, raw_arguments: Any, sources: Sequence[SourceSpec],
                          locations: Mapping[str, str], *,
                          read_limits: Mapping[str, int] | None = None,
                          roots: PathRoots | None = None,
                          web_pages: WebPages | None = None) -> dict[str, Any]:
    """Run one source tool call; ``ToolRejected`` for a call that cannot run as asked.

    ``roots``: the worker's source roots (``contracts.path_safety``; none given:
    Pressroom's own folders from ``locations``); a location outside them is ``PathRefused``.

    ``read_limits`` maps a source kind (``git``, ``document``, ``web_page``) to the most
    lines one ``read`` may return — the job policy's source limits; ``MAX_READ_LINES``
    bounds every kind whatever the policy says.

    ``web_pages``: the job's live web pages at their stored revisions
    (``activities.sources.web_revisions``); a live page is fetched once, on its first read.
    """
    arguments = parse_arguments(tool_name, raw_arguments)
    if not isinstance(arguments, ListArguments | SearchArguments | ReadArguments):
        raise ToolRejected("unknown_tool", f"{tool_name!r} does not read a source")
    source = declared(sources, arguments.source)
    if isinstance(arguments, ReadArguments):
        limit = (read_limits or {}).get(source.kind, MAX_READ_LINES)
        asked = arguments.end_line - arguments.start_line + 1
        if asked > limit:
            raise ToolRejected("arguments_over_limit",
                               f"read asks for {asked} lines; the job's policy allows at "
                               f"most {limit} per read of a {source.kind} source")
    files = await open_source(source, locations, roots, web_pages=web_pages)
    if isinstance(arguments, ListArguments):
        return _list(files, arguments)
    budget = CallBudget()  # one per call: every line and file it touches shares it
    if isinstance(arguments, SearchArguments):
        return await _search(files, arguments, budget)
    return await _read(files, arguments, budget)


def _list(files: SourceFiles, arguments: ListArguments) -> dict[str, Any]:
    folder = confine(arguments.path)
    prefix = f"{folder}/" if folder else ""
    below = [p for p in files.paths() if p.startswith(prefix)]
    if folder and not below:
        kind: RejectionKind = "not_found" if folder in files.paths() else "path_outside_source"
        raise ToolRejected(kind, f"{files.name}:{folder} is not a folder of this source")
    entries = sorted({p[len(prefix):].split("/", 1)[0] + ("/" if "/" in p[len(prefix):] else "")
                      for p in below})
    listed: dict[str, Any] = {"source": files.name, "path": folder,
                              "entries": entries[:MAX_LIST_ENTRIES],
                              "truncated": len(entries) > MAX_LIST_ENTRIES}
    # what the folder holds but is not read (a link out of the roots, a FIFO, a file over
    # the size limit), with why: never dropped silently
    excluded = [{"path": path, "reason": reason} for path, reason in files.excluded()
                if path.startswith(prefix)]
    if excluded:
        listed["excluded"] = excluded[:MAX_LIST_ENTRIES]
    return listed


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


#: a search result names at most this many of the files its limits kept it from reading
MAX_SKIPPED_SHOWN = 20


async def _search(files: SourceFiles, arguments: SearchArguments,
                  budget: CallBudget) -> dict[str, Any]:
    try:
        pattern = regex.compile(arguments.query if arguments.regex
                                else regex.escape(arguments.query), regex.IGNORECASE)
    except regex.error as exc:
        raise ToolRejected("malformed_arguments",
                           f"search.query is not a valid pattern: {exc}") from None
    selected = _selected(files, arguments.paths)
    await files.prefetch(selected, budget)
    # reading, decoding and matching block: one worker thread for the whole scan
    result = await asyncio.to_thread(_scan, files, arguments, pattern, selected, budget)
    if budget.skipped:  # what a limit kept out is named, never dropped silently
        result["skipped"] = [{"path": path, "reason": reason}
                             for path, reason in budget.skipped[:MAX_SKIPPED_SHOWN]]
        result["skipped_count"] = len(budget.skipped)
    return result


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


def search_hits(content: Mapping[str, Any]) -> Iterator[tuple[str, str, int, str]]:
    """Every hit of a stored ``search`` result: (path, revision, line number, text)."""
    for hit_file in content["files"]:
        for number, text in hit_file["lines"]:
            yield hit_file["path"], hit_file["revision"], number, text


async def _read(files: SourceFiles, arguments: ReadArguments,
                budget: CallBudget) -> dict[str, Any]:
    path = confine(arguments.path)
    if path not in files.paths():
        raise ToolRejected("not_found", f"{files.name}:{path} is no file of this source")
    await files.prefetch([path], budget)
    revision, lines = await asyncio.to_thread(files.load, path, budget)
    if arguments.start_line > len(lines):
        raise ToolRejected("not_found", f"{files.name}:{path} has {len(lines)} lines; "
                                        f"start_line {arguments.start_line} is past its end")
    end = min(arguments.end_line, len(lines))
    return {"source": files.name, "path": path, "revision": revision,
            "start_line": arguments.start_line, "end_line": end, "total_lines": len(lines),
            "lines": lines[arguments.start_line - 1:end]}
