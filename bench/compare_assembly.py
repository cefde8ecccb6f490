"""Compare context assembly of two checkouts, alternating, in the same minutes; prints JSON.

This machine is noisy (adjacent runs differ by up to ±50 %), so an "is the new code
slower?" question is answered by running the old and the new code in turns and comparing
minimums, not by two separate benchmark runs. Each measurement runs in a fresh process
with the checkout's own ``bench/assemble.py`` workload and its own ``context`` package:

    git worktree add /tmp/old <commit>
    python bench/compare_assembly.py --old /tmp/old --new . --sizes 100,1000 --pairs 6

Per run: one untimed assembly, then warm assemblies (the engine's memos filled) and cold
ones (after ``reset_caches()`` and a collection). The JSON lists every run and, per size
and version, the minimum over runs of each run's minimum and median.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

#: (warm runs, cold runs) per process, by size: enough to find a quiet minimum
RUNS = {100: (300, 25), 1_000: (60, 7), 10_000: (15, 5)}

_MEASURE = """
import gc, importlib.util, json, statistics, sys, time
root, n, warm_runs, cold_runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, root)
spec = importlib.util.spec_from_file_location("workload", f"{root}/bench/assemble.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
import context
request = bench.workload(n, n * 600)
context.assemble(request)
def timed():
    start = time.perf_counter()
    context.assemble(request)
    return (time.perf_counter() - start) * 1000
warm = [timed() for _ in range(warm_runs)]
cold = []
for _ in range(cold_runs):
    context.reset_caches()
    gc.collect()
    cold.append(timed())
print(json.dumps({"warm_ms": [min(warm), statistics.median(warm)],
                  "cold_ms": [min(cold), statistics.median(cold)]}))
"""


def measure(root: Path, size: int) -> dict[str, list[float]]:
    warm_runs, cold_runs = RUNS.get(size, (20, 5))
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(root), str(size), str(warm_runs),
         str(cold_runs)], check=True, capture_output=True, text=True, cwd=root).stdout
    result: dict[str, list[float]] = json.loads(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--old", type=Path, required=True, help="checkout of the old code")
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--pairs", type=int, default=4)
    args = parser.parse_args()
    roots = {"old": args.old.resolve(), "new": args.new.resolve()}
    runs: list[dict[str, Any]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        for pair in range(args.pairs):
            # alternate which version goes first, so neither always gets the warmer minute
            order = ("old", "new") if pair % 2 == 0 else ("new", "old")
            for version in order:
                runs.append({"size": size, "version": version,
                             **measure(roots[version], size)})
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for run in runs:
        entry = summary.setdefault(str(run["size"]), {}).setdefault(run["version"], {
            "warm_min_ms": float("inf"), "warm_best_median_ms": float("inf"),
            "cold_min_ms": float("inf"), "cold_best_median_ms": float("inf")})
        entry["warm_min_ms"] = min(entry["warm_min_ms"], round(run["warm_ms"][0], 2))
        entry["warm_best_median_ms"] = min(entry["warm_best_median_ms"],
                                           round(run["warm_ms"][1], 2))
        entry["cold_min_ms"] = min(entry["cold_min_ms"], round(run["cold_ms"][0], 2))
        entry["cold_best_median_ms"] = min(entry["cold_best_median_ms"],
                                           round(run["cold_ms"][1], 2))
    print(json.dumps({"old": str(roots["old"]), "new": str(roots["new"]),
                      "summary": summary, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
