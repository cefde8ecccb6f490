"""What a research tool call costs now that its search runs off the event loop; prints JSON.

A ``search`` (and ``read``) reads, decodes and matches in a worker thread within one budget
per call (activities/call_budget.py), where it used to run on the worker's event
loop. This script times ``run_source_tool`` calls over the example's real fixture sources
— a literal search of the git repository, a regex search of the document folder, a
``read`` — ``--calls`` times each after one warm-up, and reports the median per call and
the longest event-loop gap seen beside the calls (a 5 ms ticker).

``--code DIR`` imports the code from another checkout (an older commit in a ``git
worktree``); ``--against DIR --rounds N`` runs this checkout and DIR alternately, N rounds
each, in subprocesses, so both are measured in the same minutes on the same load
(bench/RESULTS.md).

Run: ``.venv/bin/python bench/tool_search.py [--calls 200] [--against /tmp/old --rounds 4]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]


def _measure(code: Path, calls: int) -> dict[str, Any]:
    sys.path.insert(0, str(code))
    from activities.research_tools import run_source_tool
    from contracts.source_specs import DocumentSourceSpec, GitSourceSpec, SourceSpec
    from examples.build_fixtures import EXPECTED_COMMITS, build_fixtures
    from tests.sources.conftest import locations, roots

    with tempfile.TemporaryDirectory() as name:
        fixtures = Path(name) / "fixtures"
        build_fixtures(fixtures)
        sources: list[SourceSpec] = [
            GitSourceSpec(name="backoff-lib", repo=str(fixtures / "repos" / "backoff-lib"),
                          commit=EXPECTED_COMMITS["backoff-lib"]["v2"]),
            DocumentSourceSpec(name="http-notes", path=str(fixtures / "docs")),
        ]
        cases = {
            "search_git_literal": ("search", {"source": "backoff-lib", "query": "delay"}),
            "search_docs_regex": ("search", {"source": "http-notes",
                                             "query": r"retry[- ]after", "regex": True}),
            "read_git": ("read", {"source": "backoff-lib", "path": "backoff_lib/policy.py",
                                  "start_line": 1, "end_line": 40}),
        }

        async def run() -> dict[str, Any]:
            longest = 0.0
            last = time.perf_counter()

            async def tick() -> None:
                nonlocal longest, last
                while True:
                    await asyncio.sleep(0.005)
                    now = time.perf_counter()
                    longest, last = max(longest, now - last), now

            ticker = asyncio.create_task(tick())
            out: dict[str, Any] = {}
            for case, (tool, arguments) in cases.items():
                await run_source_tool(tool, arguments, sources, locations(),
                                      roots=roots(Path(name)))  # warm: caches, imports
                seconds = []
                for _ in range(calls):
                    started = time.perf_counter()
                    await run_source_tool(tool, arguments, sources, locations(),
                                          roots=roots(Path(name)))
                    seconds.append(time.perf_counter() - started)
                out[case] = {"median_ms": round(1000 * statistics.median(seconds), 3),
                             "p90_ms": round(1000 * sorted(seconds)[int(0.9 * calls)], 3)}
            ticker.cancel()
            out["longest_loop_gap_ms"] = round(1000 * longest, 1)
            return out

        results = asyncio.run(run())
    # the code measured: the checkout imported, not whatever the venv installed
    return {"code": sys.modules[run_source_tool.__module__].__file__, "calls": calls,
            "results": results}


def _alternate(against: Path, rounds: int, calls: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"new": [], "old": []}
    for _ in range(rounds):
        for label, code in (("new", HERE), ("old", against)):
            out = subprocess.run(
                [sys.executable, __file__, "--code", str(code), "--calls", str(calls)],
                check=True, capture_output=True, text=True, cwd=HERE).stdout
            measured = json.loads(out)
            assert measured["code"].startswith(str(code)), measured["code"]
            runs[label].append(measured["results"])
    summary: dict[str, Any] = {}
    for label, measured in runs.items():
        summary[label] = {case: round(statistics.median(r[case]["median_ms"] for r in measured), 3)
                          for case in measured[0] if case != "longest_loop_gap_ms"}
        summary[label]["longest_loop_gap_ms"] = max(r["longest_loop_gap_ms"] for r in measured)
    return {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "load_average": [round(x, 2) for x in os.getloadavg()]},
            "rounds": rounds, "calls_per_case": calls, "new": str(HERE), "old": str(against),
            "median_of_round_medians_ms": summary, "runs": runs}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="timed calls per case")
    parser.add_argument("--code", type=Path, default=HERE, help="checkout to import from")
    parser.add_argument("--against", type=Path, help="an older checkout to alternate with")
    parser.add_argument("--rounds", type=int, default=4, help="rounds with --against")
    args = parser.parse_args()
    if args.against:
        print(json.dumps(_alternate(args.against, args.rounds, args.calls), indent=2))
    else:
        print(json.dumps(_measure(args.code, args.calls), indent=2))
