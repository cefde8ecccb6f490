"""The artifact store's modules import one way: no cycle between them, identifier rules
(``artifacts.ids``) depend only on the errors, and the store imports nothing above it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "artifacts"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _store_modules() -> dict[str, Path]:
    return {_module(p): p for p in PACKAGE.glob("*.py")}


def test_no_import_cycle_between_store_modules() -> None:
    modules = _store_modules()
    graph = {name: {m for m in _imports(path, top_level_only=False)
                    if m in modules and m != name and m != "artifacts"}
             for name, path in modules.items() if name != "artifacts"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    cyclic = sorted(name for name in graph if reaches(name, name, {name}))
    assert cyclic == [], cyclic


def test_identifier_rules_depend_only_on_the_errors() -> None:
    imported = _imports(PACKAGE / "ids.py", top_level_only=False)
    ours = {m for m in imported if m.split(".")[0] == "artifacts"}
    assert ours <= {"artifacts.errors", "artifacts.errors.InvalidArtifact"}, ours
    assert "artifacts.validate" not in _imports(PACKAGE / "types.py", top_level_only=False)


def test_store_and_context_import_nothing_above_them() -> None:
    above = {"activities", "workflows", "pressroom", "worker", "evals", "bench"}
    for package in ("artifacts", "context"):
        for path in (ROOT / package).rglob("*.py"):
            roots = {m.split(".")[0] for m in _imports(path, top_level_only=False)}
            assert not roots & above, (path, roots & above)
