"""The package dependencies point one way: ``workflows`` → ``contracts`` ← ``activities``.

The workflow and its activities share only the ``contracts`` package; a module that
imported across (an activity importing workflow code, the workflow importing activity
code into its sandbox, a contract importing either) would bring back the import cycle
that once needed lazy module attributes to survive. Checked statically from the source.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: package (or top-level module) -> top-level packages/modules it must never import
FORBIDDEN = {
    "contracts": {"workflows", "activities", "pressroom", "worker"},
    "activities": {"workflows", "pressroom", "worker"},
    "workflows": {"activities"},
}


def _imported_modules(path: Path) -> set[tuple[int, str]]:
    found: set[tuple[int, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {(node.lineno, alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add((node.lineno, node.module))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.add((node.lineno, node.args[0].value))
    return found


def _imported_roots(path: Path) -> set[tuple[int, str]]:
    return {(line, module.split(".")[0]) for line, module in _imported_modules(path)}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_point_one_way(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no sources found for {package}"
    crossings = [
        f"{path.relative_to(ROOT)}:{line} imports {root}"
        for path in files
        for line, root in sorted(_imported_roots(path))
        if root in FORBIDDEN[package]
    ]
    assert crossings == []


def test_the_helper_pool_does_not_import_the_runtime_that_holds_it() -> None:
    """The worker builds the pool and hands it to the runtime; the pool gets a factory for
    the runtime its helpers use, so ``offload`` never imports ``runtime``."""
    offload = ROOT / "activities" / "offload.py"
    assert not {m for _, m in _imported_modules(offload) if m == "activities.runtime"}
    runtime = ROOT / "activities" / "runtime.py"
    assert {m for _, m in _imported_modules(runtime) if m == "activities.offload"}


def test_the_check_sees_a_crossing(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\nfrom workflows.errors import JobExists\n", encoding="utf-8")
    assert (2, "workflows") in _imported_roots(module)
