"""Every citation in the code and the docs points at something a clone holds.

Docstrings explain a choice by citing the design (``docs/context-engine.md#hard-gates``).
A citation of a document the repository does not contain, of a section that was renamed,
of a file that moved, or of an issue number (the tracker is not in the clone) sends a
maintainer nowhere; these tests fail on each.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"docs/([a-z0-9_-]+\.md)(?:#([a-z0-9_-]+))?")
#: citations of documents a clone does not have (the seed specifications, the old design)
OUTSIDE = re.compile(r"\bseed 00\d\b|\bDESIGN\.md\b", re.IGNORECASE)
#: a citation of the issue tracker: "issue 12", "issues 4 and 14", "(issue …)", "the issue's"
ISSUE = re.compile(r"\bissues? #?\d+|\(issue\b|\bthe issue's\b", re.IGNORECASE)
#: a repo-relative path as docs and comments cite it (``context/tools/fold.py``,
#: ``tests/test_docs_links.py::test_slug_follows_github``). One right after a quote is
#: example data in prose (a tool's output quoted in a docstring); ``reports/`` is written
#: by the tests, not tracked.
_TOP = ("activities|artifacts|bench|context|contracts|deploy|docs|evals|examples|tests|"
        "webconsole|workflows|client|presentation|cli")
CITED_PATH = re.compile(
    rf"(?<![\w./\-\"'])((?:{_TOP})/[\w./\-]*\.(?:py|md|yaml|yml|json|jsonl|toml|sh|html|txt))"
    r"(?:::(\w+))?")


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


def test_nothing_cites_an_issue_number() -> None:
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in tracked_sources() if path.name != "test_docs_links.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if ISSUE.search(line)]
    assert not found, "\n".join(found)


def prose_of_python(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a module, line by line: what a person reads as
    documentation (string literals elsewhere are data)."""
    lines: list[tuple[int, str]] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines.append((token.start[0], token.string))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = node.body[0] if node.body else None
            if (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)):
                lines.extend((doc.lineno + i, text)
                             for i, text in enumerate(doc.value.value.splitlines()))
    return lines


def broken_paths(where: str, lines: list[tuple[int, str]]) -> list[str]:
    broken: list[str] = []
    for number, line in lines:
        for cited, name in CITED_PATH.findall(line):
            cited = cited.rstrip(".")
            target = ROOT / cited
            if not target.exists():
                broken.append(f"{where}:{number}: no {cited}")
            elif name and target.is_file() and name not in target.read_text(encoding="utf-8"):
                broken.append(f"{where}:{number}: {cited} has no {name}")
    return broken


def test_prose_of_python_reads_comments_and_docstrings_only() -> None:
    source = '''"""Module: docs/a.md."""
x = "docs/data.md"  # see docs/b.md
def f() -> None:
    """docs/c.md"""
'''
    cited = [m for _, text in prose_of_python(source) for m in CITED_PATH.findall(text)]
    assert [c for c, _ in cited] == ["docs/b.md", "docs/a.md", "docs/c.md"]
    assert broken_paths("x", [(1, "`tests/nowhere.py` and `tests/test_docs_links.py`")]) == [
        "x:1: no tests/nowhere.py"]
    assert broken_paths("x", [(1, "tests/__init__.py::test_nothing_here")]) == [
        "x:1: tests/__init__.py has no test_nothing_here"]
    assert broken_paths("x", [(1, 'a warning "docs/gone.md: skipped"')]) == []


def test_every_path_cited_in_docs_and_comments_exists() -> None:
    broken: list[str] = []
    for path in tracked_sources():
        where = str(path.relative_to(ROOT))
        if where.startswith("tests/histories/"):
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".md":
            broken += broken_paths(where, list(enumerate(text.splitlines(), 1)))
        elif path.suffix == ".py":
            broken += broken_paths(where, prose_of_python(text))
    assert not broken, "\n".join(broken)
