"""The extractive writer's own time per draft, on real source text; prints JSON.

``activities.providers.extractive.compose`` is the offline provider's whole work for a
draft: read the brief, split every evidence block into quotable passages, pick findings per
topic. Whole-sentence quotes (``activities/providers/passages.py``) added a pass over each
block that joins wrapped lines into sentences and statements; this measures what that
costs against the same request.

The request is built here, not assembled: one evidence data block per 40-line excerpt of
the standard-library corpus (``examples/build_fixtures.py``: asyncio & co. at one pinned
commit) and of Markdown and text documents made of those files' docstrings and comments,
``--blocks`` of them, cited ``name@commit:path#La-Lb`` as notes are; eight topics whose
terms those files use. Every run composes the same request; ``--runs`` times are taken and
the median, p90 and the findings' shape (how many quotes, how many span lines) printed.

To compare two checkouts, run this script from each, alternately, in the same minutes
(bench/RESULTS.md says how the recorded figures were taken).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from activities.providers.extractive import compose  # noqa: E402
from activities.providers.payload import RequestView  # noqa: E402
from context import DataBlockView  # noqa: E402
from examples.build_fixtures import build_fixtures  # noqa: E402

TOPICS = {"timeouts": ["timeout"], "cancellation": ["cancel"], "shutdown": ["shutdown"],
          "locks": ["lock"], "queues": ["queue"], "tasks": ["task group", "taskgroup"],
          "streams": ["stream"], "subprocesses": ["subprocess"]}
EXCERPT_LINES = 40
_FINDING = re.compile(r'^- ".+" — `[^`]+#L(?P<a>\d+)-L(?P<b>\d+)`')


def _prose_of(code: str) -> str:
    """A Markdown document made of a module's docstrings and comments, wrapped as written:
    the sentences a document source would hold about the same code."""
    out: list[str] = []
    for line in code.splitlines():
        text = line.strip()
        if text.startswith("#") and len(text) > 2:
            out.append(text.lstrip("# "))
        elif text and not text.startswith(("def ", "class ", "return", "import", "from")) \
                and not any(c in text for c in "=()[]{}"):
            out.append(text.strip('"'))
        elif not text and out and out[-1]:
            out.append("")
    return "\n".join(out)


def request(fixtures: Path, blocks: int) -> RequestView:
    corpus = sorted((fixtures / "repos" / "cpython-stdlib").rglob("*.py"))
    texts: list[tuple[str, str]] = []
    for path in corpus:
        code = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(fixtures / "repos" / "cpython-stdlib").as_posix()
        texts.append((f"cpython@{'a' * 40}:{rel}", code))
        texts.append((f"docs:{rel.removesuffix('.py')}.md", _prose_of(code)))
    view = RequestView()
    view.trusted.append("Research question: How does asyncio time out, cancel and shut "
                        "down work?\nTopics the article must cover, with their search terms:\n"
                        + "\n".join(f"- {name}: {', '.join(terms)}"
                                    for name, terms in TOPICS.items()))
    while len(view.blocks) < blocks:
        for base, text in texts:
            lines = text.splitlines()
            for start in range(0, len(lines), EXCERPT_LINES):
                chunk = lines[start:start + EXCERPT_LINES]
                if len(view.blocks) >= blocks or not "".join(chunk).strip():
                    continue
                a, b = start + 1, start + len(chunk)
                view.blocks.append(DataBlockView(
                    item_id=f"note:bench:{len(view.blocks)}#1", citation=f"{base}#L{a}-L{b}",
                    revision="1", trust="repository_evidence", role="untrusted_data",
                    flags=(), content_hash="sha256:" + "0" * 64, content="\n".join(chunk)))
    return view


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=400)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        build_fixtures(Path(tmp))
        view = request(Path(tmp), args.blocks)
    compose(view)  # warm: compiled patterns, the detector's tables
    times: list[float] = []
    text = ""
    for _ in range(args.runs):
        begin = time.perf_counter()
        text = compose(view)
        times.append(time.perf_counter() - begin)
    spans = [int(m.group("b")) - int(m.group("a")) + 1
             for line in text.splitlines() if (m := _FINDING.match(line))]
    ordered = sorted(times)
    result: dict[str, Any] = {
        "blocks": len(view.blocks),
        "evidence_lines": sum(b.content.count("\n") + 1 for b in view.blocks),
        "runs": args.runs,
        "median_ms": round(statistics.median(times) * 1000, 1),
        "p90_ms": round(ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))] * 1000,
                        1),
        "findings": len(spans),
        "multi_line_findings": sum(1 for s in spans if s > 1),
        "mean_quote_chars": round(statistics.mean(
            len(line.split('" — `')[0]) - 3 for line in text.splitlines()
            if _FINDING.match(line)), 1) if spans else 0,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
