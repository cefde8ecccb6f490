"""The import rules of docs/architecture.md, checked on the source (``ast``), not trusted.

* No import cycle between any two modules of the project — counting imports inside
  functions, which is how cycles used to hide; only ``if TYPE_CHECKING:`` blocks are left
  out (they never run).
* Layers point one way: the entry points (``pressroom.py``, ``worker.py`` and the ``cli``
  package behind them) → ``client`` (the job API over Temporal) and ``presentation`` (what
  a job, a turn, a manifest look like as text) → ``workflows`` → ``contracts``; the
  activities (``activities``) sit beside the workflow over (``contracts``, ``context``,
  ``artifacts``). ``workflows`` imports only ``contracts`` and its own modules — the
  workflow calls activities by name and shares only ``contracts`` with them, so no I/O or
  client code is pulled into its sandbox. The review console (``webconsole``) is an entry
  point too: it may import ``client`` and ``presentation`` but never ``cli`` (what it shares
  with the command line lives in those two), and no activity code. ``client`` imports
  neither ``cli``, ``presentation`` nor the console; ``presentation`` none of ``cli``,
  ``client``, ``workflows`` or the console. ``context`` and ``artifacts`` import nothing
  above them; ``contracts`` and ``activities`` nothing from the client side or above.
* Identifier rules (``artifacts.ids``) depend on nothing but the store's errors, so
  ``artifacts.types`` and ``artifacts.validate`` can both use them without a cycle.
* Inside the context engine: the shared types at the top of ``context`` import no stage
  folder; ``context.assembly.state`` imports no stage; no stage imports the pipeline or the
  engine; nothing inside the engine imports its own front module ``context``.

The checker itself is tested on small hand-made graphs, so a rule that can no longer fail
is noticed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("context", "artifacts", "contracts", "activities", "workflows", "client",
            "presentation", "cli", "evals", "webconsole")
SCRIPTS = ("pressroom", "worker", "settings")
#: every top-level name of the project (packages and scripts)
_ALL = frozenset(PACKAGES + SCRIPTS)
#: the client side and the entry points, which nothing below them may import
_CLIENT_SIDE = frozenset({"client", "presentation", "cli", "evals", "pressroom", "worker",
                          "webconsole"})
#: what each layer must never import (by top-level name)
FORBIDDEN: dict[str, frozenset[str]] = {
    "context": frozenset({"artifacts", "contracts", "activities", "workflows", "settings"})
    | _CLIENT_SIDE,
    "artifacts": frozenset({"context", "contracts", "activities", "workflows"})
    | _CLIENT_SIDE,
    "contracts": frozenset({"activities", "workflows"}) | _CLIENT_SIDE,
    "activities": frozenset({"workflows"}) | _CLIENT_SIDE,
    # workflow-side code only: the workflow's sandbox sees contracts and nothing else
    "workflows": _ALL - {"workflows", "contracts"},
    "settings": frozenset({"context", "activities", "workflows"}) | _CLIENT_SIDE,
    # the job API over Temporal: used by every entry point, it uses none of them
    "client": frozenset({"activities"}) | _CLIENT_SIDE - {"client"},
    # what a job, a turn, a manifest look like as text, shared by the CLI and the console
    "presentation": frozenset({"activities", "workflows"}) | _CLIENT_SIDE - {"presentation"},
    # the command line's side: entry-side, beside pressroom.py and worker.py
    "cli": frozenset({"activities", "evals", "pressroom", "worker", "webconsole"}),
    # the review console is an entry point beside pressroom.py: it drives jobs through the
    # client package, shows them through presentation and reads the store; it never runs
    # activity code, and never imports the CLI (what the two share lives in those packages)
    "webconsole": frozenset({"activities", "cli", "evals", "pressroom", "worker"}),
}
CONTEXT_STAGES = ("admission", "ranking", "tools", "limits", "budget", "seal", "assembly")


def project_modules() -> dict[str, Path]:
    """Every module of the project by dotted name (packages by their ``__init__``)."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    for script in SCRIPTS:
        path = ROOT / f"{script}.py"
        if path.exists():
            modules[script] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (n for child in node.orelse for n in _imports_of(child))
            continue
        yield from _imports_of(node)


def _imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _imports(node)


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    # a package's own name counts as one level for its __init__; modules drop their name
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (``from pkg import mod`` names ``pkg.mod``)."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(module, node, path.name == "__init__.py")
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                           else base for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    edges.add(target)
        graph[module] = edges
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    found: list[str] = []
    for module, targets in sorted(graph.items()):
        top = module.split(".")[0]
        for target in sorted(targets):
            if target.split(".")[0] in FORBIDDEN.get(top, frozenset()):
                found.append(f"{module} imports {target}")
    return found


def engine_violations(graph: dict[str, set[str]]) -> list[str]:
    found: list[str] = []
    for module, targets in sorted(graph.items()):
        parts = module.split(".")
        if parts[0] != "context" or module == "context":
            continue
        shared = len(parts) == 2 and parts[1] not in CONTEXT_STAGES
        for target in sorted(targets):
            tparts = target.split(".")
            if target == "context":
                found.append(f"{module} imports the engine's front module")
            elif tparts[0] != "context" or len(tparts) < 2:
                continue
            elif shared and tparts[1] in CONTEXT_STAGES:
                found.append(f"shared module {module} imports stage module {target}")
            elif module == "context.assembly.state" and tparts[1] in CONTEXT_STAGES:
                found.append(f"the assembly state imports stage module {target}")
            elif (len(parts) > 2 and parts[1] != "assembly"
                  and target in ("context.assembly.pipeline", "context.assembly.engine")):
                found.append(f"stage module {module} imports {target}")
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(project_modules())


def test_the_graph_sees_the_project(graph: dict[str, set[str]]) -> None:
    """Guard the guard: an empty or unresolved graph would pass every rule below."""
    assert "context.assembly.pipeline" in graph
    assert "context.admission.stage" in graph["context.assembly.pipeline"]
    assert "context.memo" in graph["context.assembly.state"]  # `from context import memo`
    assert len(graph) > 100
    assert "presentation.turns" in graph["webconsole.backend"]
    assert "client.jobs" in graph["cli.commands"]


def test_no_module_imports_itself_back(graph: dict[str, set[str]]) -> None:
    assert find_cycles(graph) == []


def test_layers_import_only_downwards(graph: dict[str, set[str]]) -> None:
    assert layer_violations(graph) == []


def test_engine_imports_run_state_to_stages_to_pipeline(graph: dict[str, set[str]]) -> None:
    assert engine_violations(graph) == []


def test_identifier_rules_depend_only_on_the_errors(graph: dict[str, set[str]]) -> None:
    assert graph["artifacts.ids"] <= {"artifacts.errors"}


def test_the_checker_finds_what_it_must() -> None:
    cyclic = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": {"a.x"}}
    assert find_cycles(cyclic) == [["a.x", "a.y", "a.z"]]
    assert find_cycles({"a.x": {"a.y"}, "a.y": set()}) == []
    assert layer_violations({"context.items": {"activities.runtime"}}) == [
        "context.items imports activities.runtime"]
    assert layer_violations({"activities.draft": {"workflows.research_job"}})
    assert layer_violations({"webconsole.app": {"activities.runtime"}})
    assert layer_violations({"cli.commands": {"webconsole.accounts"}})
    assert layer_violations({"webconsole.app": {"cli.commands"}}) == [
        "webconsole.app imports cli.commands"]
    assert layer_violations({"workflows.research_job": {"client.errors"}})
    assert layer_violations({"workflows.research_job": {"settings"}})
    assert layer_violations({"client.jobs": {"cli.pins"}})
    assert layer_violations({"presentation.turns": {"cli.commands"}})
    assert layer_violations({"presentation.explain": {"client.jobs"}})
    assert not layer_violations({"webconsole.app": {"presentation.turns", "client.jobs"}})
    assert engine_violations({
        "context.items": {"context.ranking.relevance"},
        "context.assembly.state": {"context.admission.gates"},
        "context.tools.stage": {"context.assembly.pipeline"},
        "context.manifest": {"context"},
    }) == [
        "the assembly state imports stage module context.admission.gates",
        "shared module context.items imports stage module context.ranking.relevance",
        "context.manifest imports the engine's front module",
        "stage module context.tools.stage imports context.assembly.pipeline",
    ]


def test_function_level_imports_count() -> None:
    source = "def f():\n    from b import c\n\nif TYPE_CHECKING:\n    import d\n"
    found = [n.module if isinstance(n, ast.ImportFrom) else n.names[0].name
             for n in _imports(ast.parse(source))]
    assert found == ["b"]
