"""Every design citation in the code points at a section that exists in ``docs/``.

Docstrings explain a choice by citing the design (``docs/context-engine.md#hard-gates``).
A citation of a document the repository does not contain, or of a section that was renamed,
sends a maintainer nowhere; this test fails on either.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"docs/([a-z0-9_-]+\.md)(?:#([a-z0-9_-]+))?")
#: citations of documents a clone does not have (the seed specifications, the old design)
OUTSIDE = re.compile(r"\bseed 00\d\b|\bDESIGN\.md\b", re.IGNORECASE)


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to
    hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    found: set[str] = set()
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found


def tracked_sources() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.yaml"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def test_slug_follows_github() -> None:
    assert slug(" Structure: trust zones and tool pairing") == (
        "structure-trust-zones-and-tool-pairing")
    assert slug("Invariant 3: structure before transforms") == (
        "invariant-3-structure-before-transforms")
    assert anchors("# A\n```\n# not a heading\n```\n## B c\n") == {"a", "b-c"}


def test_every_docs_citation_resolves() -> None:
    sections = {path.name: anchors(path.read_text(encoding="utf-8"))
                for path in (ROOT / "docs").glob("*.md")}
    broken: list[str] = []
    for path in tracked_sources():
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), start=1):
            for document, anchor in CITATION.findall(line):
                where = f"{path.relative_to(ROOT)}:{number}"
                if document not in sections:
                    if anchor:  # a bare path may be example data; a section is a citation
                        broken.append(f"{where}: no docs/{document}")
                elif anchor and anchor not in sections[document]:
                    broken.append(f"{where}: docs/{document} has no section #{anchor}")
    assert not broken, "\n".join(broken)


def test_no_code_cites_a_document_outside_the_repository() -> None:
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in tracked_sources() if path.suffix == ".py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if OUTSIDE.search(line) and path.name != "test_docs_links.py"]
    assert not found, "\n".join(found)
