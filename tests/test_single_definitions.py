"""Each of the project's lists is defined once and derived everywhere else.

The lists: a job's stages and assembly stages and its activities (``contracts.steps``), the
provider adapters (``context.vocabulary.ADAPTER_NAMES``) and the hard gates
(``context.vocabulary.Gate`` / ``GATE_ORDER``). The scan fails when a module writes a
tuple, list, set, ``Literal[...]`` or dict keys holding a copy of one of them (three or
more of its names, or the whole of a shorter list, making most of the literal); the few
per-name tables that must spell each name (a bound per activity, a check per gate …) are
named in ``TABLES`` and checked here to cover their list exactly. The gate memo key is
derived from the gate set, so a changed gate set can never reuse an outcome.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast, get_args, get_type_hints

import pytest

from context.vocabulary import ADAPTER_NAMES, GATE_ORDER, GATE_SET_KEY, Gate
from contracts.steps import (
    ACTIVITY_NAMES,
    ACTIVITY_STAGE,
    ASSEMBLY_STAGES,
    CHECKPOINT_STAGES,
    RETIRED_ACTIVITIES,
    STAGES,
    AssemblyStage,
    Stage,
)

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("activities", "artifacts", "bench", "cli", "context", "contracts", "evals",
               "webconsole", "workflows")
SOURCE_FILES = ("pressroom.py", "worker.py", "settings.py")

LISTS: dict[str, frozenset[str]] = {
    "stages": frozenset(STAGES),
    "activities": frozenset(ACTIVITY_NAMES) | RETIRED_ACTIVITIES,
    "adapters": frozenset(ADAPTER_NAMES),
    "gates": frozenset(g.value for g in Gate),
}
#: where each list is defined (its ``Literal`` / enum may spell it there)
DEFINED_IN = {"stages": "contracts/steps.py", "activities": "contracts/steps.py",
              "adapters": "context/vocabulary.py", "gates": "context/vocabulary.py"}
#: (file, first line of the literal) of the per-name tables; each is checked below
TABLES = {
    ("contracts/steps.py", "ACTIVITY_STAGE"),
    ("workflows/temporal_config.py", "ACTIVITY_LIMITS"),
    ("activities/context_activity.py", "DECISIONS"),
    ("context/admission/gates.py", "_CHECKS"),
    ("activities/offload.py", "_BODIES"),
}


def _sources() -> Iterator[Path]:
    for folder in SOURCE_DIRS:
        yield from sorted((ROOT / folder).rglob("*.py"))
    for name in SOURCE_FILES:
        yield ROOT / name


def _name_of(node: ast.AST) -> str | None:
    """The list name a literal element spells: a string, ``Gate.X`` as its value, or a
    pair's first element (``(Gate.X, check)``)."""
    if isinstance(node, ast.Tuple) and node.elts:
        node = node.elts[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "Gate" and node.attr in Gate.__members__):
        return Gate[node.attr].value
    return None


def _table_name(tree: ast.AST, literal: ast.AST) -> str | None:
    """The name a literal is assigned to at module level, if any."""
    for stmt in getattr(tree, "body", []):
        if isinstance(stmt, ast.AnnAssign | ast.Assign) and stmt.value is literal:
            target = stmt.target if isinstance(stmt, ast.AnnAssign) else stmt.targets[0]
            return target.id if isinstance(target, ast.Name) else None
    return None


def copies_in(source: str, path: str) -> list[str]:
    """Each literal of ``source`` that copies one of ``LISTS`` (``path``: for messages)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            elements: list[ast.expr] = list(node.elts)
        elif isinstance(node, ast.Dict):
            elements = [k for k in node.keys if k is not None]
        else:
            continue
        names = [_name_of(e) for e in elements]
        for what, members in LISTS.items():
            hits = {n for n in names if n in members}
            enough = len(hits) >= min(3, len(members))
            if not enough or len(hits) * 5 < len(elements) * 3:
                continue
            if path == DEFINED_IN[what] and not isinstance(node, ast.Dict):
                continue  # the definition itself (its Literal)
            if (path, _table_name(tree, node)) in TABLES:
                continue
            if _table_name(tree, node) == "__all__":
                continue  # function names that match activity names
            found.append(f"{path}:{node.lineno}: a copy of the {what} "
                         f"({', '.join(sorted(hits))})")
    return found


def test_no_module_copies_a_list() -> None:
    found = []
    for file in _sources():
        if file.exists():
            rel = file.relative_to(ROOT).as_posix()
            found += copies_in(file.read_text(encoding="utf-8"), rel)
    assert not found, "derive these from the one definition:\n" + "\n".join(found)


@pytest.mark.parametrize("source", [
    'STAGES = ("plan", "research", "draft", "review", "revise", "publish")',
    'x: Literal["plan", "research", "draft", "revise", "publish"]',
    'ok = frozenset({"draft", "revise", "publish"})',
    'NAMES = ["store_job_spec", "write_plan", "draft", "publish"]',
    'A = {"openai_chat": 1, "anthropic_messages": 2}',
    'checks = ((Gate.PERMISSION, f), (Gate.SCOPE, g), (Gate.SECURITY, h))',
    'order = (Gate.PERMISSION, Gate.SCOPE, Gate.FRESHNESS)',
])
def test_the_scan_finds_a_copy(source: str) -> None:
    assert copies_in(source, "activities/x.py")


@pytest.mark.parametrize("source", [
    'refs = ("job_spec", "plan", "source_records", "evidence_pack", "tool_records", "draft")',
    'if stage in ("draft", "revise"): pass',
    'OPERATIONS = frozenset({"decide", "draft", "revise"})',
])
def test_the_scan_leaves_what_is_no_copy(source: str) -> None:
    assert not copies_in(source, "activities/x.py")


# ------------------------------------------------------------- the derived ones agree


def test_stage_lists_agree() -> None:
    from activities import checkpoint, telemetry
    from activities.context_activity import DECISIONS, EVIDENCE_STAGES
    from contracts.activity_messages import AssembleContextInput
    from contracts.workflow_messages import JobState, JobStatus
    from webconsole.timeline import STAGE_ORDER

    assert set(ASSEMBLY_STAGES) < set(STAGES)
    assert checkpoint.STAGES == CHECKPOINT_STAGES == tuple(
        s for s in STAGES if s not in ("start", "done"))
    assert telemetry.STAGES == frozenset(ASSEMBLY_STAGES)
    assert tuple(DECISIONS) == ASSEMBLY_STAGES
    assert EVIDENCE_STAGES <= set(ASSEMBLY_STAGES)
    assert STAGE_ORDER == tuple(s for s in STAGES if s != "done")
    assert get_type_hints(AssembleContextInput)["stage"] == AssemblyStage
    assert get_type_hints(JobState)["stage"] == Stage
    assert get_type_hints(JobStatus)["stage"] == Stage


def test_activity_lists_agree() -> None:
    from temporalio.activity import _Definition

    from activities import ACTIVITY_NAMES as FRONT
    from activities.offload import OFFLOADABLE
    from activities.registry import build_activities
    from activities.runtime import ActivityRuntime
    from webconsole.timeline import stage_of
    from workflows.temporal_config import ACTIVITY_LIMITS
    from workflows.temporal_config import RETIRED_ACTIVITIES as CONFIG_RETIRED

    unused = cast(ActivityRuntime, None)  # the activities are only named here, never run
    registered = [_Definition.must_from_callable(fn).name for fn in build_activities(unused)]
    assert registered == [*ACTIVITY_NAMES, "check_job_paths_here"]
    assert FRONT == ACTIVITY_NAMES
    assert CONFIG_RETIRED == RETIRED_ACTIVITIES
    assert not RETIRED_ACTIVITIES & set(ACTIVITY_NAMES)
    assert set(ACTIVITY_LIMITS) == set(ACTIVITY_NAMES) | RETIRED_ACTIVITIES
    assert set(ACTIVITY_STAGE) <= set(ACTIVITY_NAMES) | RETIRED_ACTIVITIES
    assert set(ACTIVITY_STAGE.values()) <= set(STAGES)
    assert OFFLOADABLE <= set(ACTIVITY_NAMES)
    for name, stage in ACTIVITY_STAGE.items():
        assert stage_of(name, None) == stage


def test_adapter_lists_agree() -> None:
    from activities.providers import payload
    from context.seal.adapters import ADAPTERS
    from contracts.job_spec import ModelSpecInput
    from contracts.model_endpoints import PROVIDER_ADAPTERS

    assert tuple(ADAPTERS) == ADAPTER_NAMES
    assert all(ADAPTERS[name].name == name for name in ADAPTER_NAMES)
    assert payload.ADAPTERS == ADAPTER_NAMES
    assert get_args(get_type_hints(ModelSpecInput)["adapter"]) == ADAPTER_NAMES
    assert set(PROVIDER_ADAPTERS.values()) <= {*ADAPTER_NAMES, None}


def test_gate_lists_agree() -> None:
    from context.admission.gates import _CHECKS

    assert GATE_ORDER == tuple(Gate)
    assert tuple(_CHECKS) == GATE_ORDER
    assert GATE_SET_KEY == ",".join(g.value for g in GATE_ORDER)


def test_the_gate_memo_key_follows_the_gate_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """A memoized gate outcome is keyed by the gate set: under another set (a gate added or
    reordered) nothing is reused, and the outcomes are computed again."""
    from context import assemble
    from context.admission import stage
    from context.admission.gates import GateRunner
    from tests.context.builders import item, request

    req = request([item("doc", "retry policies back off exponentially")])
    assemble(req)  # warm: every outcome memoized
    runs: list[str] = []
    real = GateRunner.run

    def counting(self: GateRunner, it: Any) -> Any:
        runs.append(it.item_id)
        return real(self, it)

    monkeypatch.setattr(GateRunner, "run", counting)
    assemble(req)
    assert "doc" not in runs  # warm: reused (the step's own item is built anew each time)
    monkeypatch.setattr(stage, "GATE_SET_KEY", GATE_SET_KEY + ",a_new_gate")
    assemble(req)
    assert "doc" in runs  # another gate set: gated again
