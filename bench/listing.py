"""How long a document source takes to be listed — or refused by its size — when its
folder holds N files; prints JSON.

The hostile corpus (``tests/hostile/corpus.py``) has a folder of 100,000 empty ``.md``
files. The listing used to stat every one before the size check refused the folder (34 s
in that test); it now stops at file ``MAX_FILES + 1``. This script times
a research tool's ``list`` call on folders of each size (the folder is made before the clock
starts; ``activities.research_tools.run_source_tool``, which opens the folder through its
source kind) and reports the outcome. Figures before the research tools were the only
reader timed the one-shot acquisition (bench/RESULTS.md).

Run: ``.venv/bin/python bench/listing.py [--sizes 100,1000,100000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from activities.research_tools import ToolRejected, run_source_tool
from contracts.source_specs import DocumentSourceSpec
from tests.sources.conftest import locations, roots


def _folder(parent: Path, files: int) -> Path:
    folder = parent / f"docs-{files}"
    folder.mkdir()
    for index in range(files):
        os.close(os.open(folder / f"f{index}.md", os.O_CREAT | os.O_WRONLY))
    return folder


def _time(tmp: Path, folder: Path) -> tuple[float, str, str]:
    spec = DocumentSourceSpec(name="d", path=str(folder))
    started = time.perf_counter()
    try:
        listed = asyncio.run(run_source_tool("list", {"source": "d"}, [spec], locations(),
                                             roots=roots(tmp)))
        outcome, reason = "listed", f"{len(listed['entries'])} entries"
    except ToolRejected as refused:
        outcome, reason = refused.kind, refused.detail
    return time.perf_counter() - started, outcome, reason[:80]


def main(sizes: list[int], repeat: int) -> dict[str, Any]:
    results = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for files in sizes:
            folder = _folder(tmp, files)
            runs = [_time(tmp, folder) for _ in range(repeat)]
            seconds = [run[0] for run in runs]
            results.append({"files": files, "median_s": round(statistics.median(seconds), 3),
                            "runs_s": [round(s, 3) for s in seconds], "outcome": runs[0][1],
                            "reason": runs[0][2]})
    return {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "load_average": [round(x, 2) for x in os.getloadavg()]},
            # the code measured: this script's checkout, not whatever the venv installed
            "code": sys.modules[run_source_tool.__module__].__file__, "results": results}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,100000",
                        help="comma-separated file counts (default 100,1000,100000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per size")
    args = parser.parse_args()
    print(json.dumps(main([int(s) for s in args.sizes.split(",")], args.repeat), indent=2))
