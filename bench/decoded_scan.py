"""What scanning the decoded view of tool results costs per result; prints JSON.

The security gate scans every tool result once per worker (memoized by its verified
hash); since the decoded-view scan (``context.admission.carriers``) a result that holds an
escape — every JSON ``read`` of a file with a quote in it — is decoded and scanned again.
This measures ``Detector.scan_secrets`` per result on the shapes a research loop stores,
old and new checkout alternately in fresh processes (this machine is noisy; compare
minimums taken in the same minutes):

    git worktree add /tmp/old <commit>
    python bench/decoded_scan.py --old /tmp/old --new . --pairs 5

Workloads (each as ``activities.tool_call`` stores it: ``json.dumps(sort_keys=True,
ensure_ascii=False)``): a 200-line ``read`` of Python source (quotes on most lines: escapes
that spell nothing, no prefilter word — the cheap path), the same with the word ``token``
on every line (the decoded view is built and scanned), a 200-line ``read`` of prose (no
escape), a ``search`` result of 50 hit lines of code, and a 60-line ``read`` of a
configuration file holding 20 quoted secrets (found only in the decoded view).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

_MEASURE = r'''
import json, statistics, sys, time
root = sys.argv[1]
sys.path.insert(0, root)
from context.admission.security import Detector
det = Detector()
code = [f'    value_{i} = call("arg {i}", key="k{i}", path="a/b/{i}.py")  # see "docs"'
        for i in range(200)]
prose = [f"Line {i} of the handbook explains how retries back off under load."
         for i in range(200)]
config = []
for i in range(20):
    config += [f'service_{i}_url = "https://svc{i}.example.org/api"',
               f'SVC{i}_DB_PASSWORD = "Xk29fjQm{i:02d}vB7q"', f'timeout_{i} = "30s"']
def read(lines):
    return json.dumps({"source": "repo", "path": "x.py", "revision": "0" * 40,
                       "start_line": 1, "end_line": len(lines), "total_lines": len(lines),
                       "lines": lines}, sort_keys=True, ensure_ascii=False)
search = json.dumps({"source": "repo", "query": "value", "regex": False,
                     "files_searched": 12, "hit_count": 50, "truncated": False,
                     "files": [{"path": f"m{f}.py", "revision": "0" * 40,
                                "lines": [[n, code[n]] for n in range(10)]}
                               for f in range(5)]}, sort_keys=True, ensure_ascii=False)
tokens = [line.replace("value_", "token_") for line in code]  # a prefilter word on each line
workloads = {"read_code_200": read(code), "read_code_token_200": read(tokens),
             "read_prose_200": read(prose),
             "search_code_50": search, "read_config_secrets_60": read(config)}
out = {}
for name, text in workloads.items():
    det.scan_secrets(text)
    runs = []
    for _ in range(int(sys.argv[2])):
        start = time.perf_counter()
        det.scan_secrets(text)
        runs.append((time.perf_counter() - start) * 1e6)
    found = det.scan_secrets(text)
    out[name] = {"chars": len(text), "min_us": round(min(runs), 1),
                 "median_us": round(statistics.median(runs), 1),
                 "kinds": list(found.kinds) if found else []}
print(json.dumps(out))
'''


def measure(root: Path, runs: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(root), str(runs)],
                          capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--new", type=Path, default=Path("."))
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--runs", type=int, default=300, help="timed scans per process")
    args = parser.parse_args()
    runs: list[dict[str, Any]] = []
    for pair in range(args.pairs):
        for version, root in (("old", args.old), ("new", args.new)):
            runs.append({"pair": pair, "version": version, **measure(root.resolve(), args.runs)})
    best: dict[str, dict[str, Any]] = {}
    for run in runs:
        for name, m in run.items():
            if not isinstance(m, dict):
                continue
            cell = best.setdefault(name, {"chars": m["chars"]})
            for stat in ("min_us", "median_us"):
                key = f"{run['version']}_{stat}"
                cell[key] = min(cell.get(key, m[stat]), m[stat])
            cell[f"{run['version']}_kinds"] = m["kinds"]
    print(json.dumps({"runs": runs, "best": best}, indent=1))


if __name__ == "__main__":
    main()
