"""The public front of each package is pinned: what ``from <package> import *`` offers.

A name added to or dropped from a front module is an API change a reviewer should see in
the diff of this file, not discover from a user. Every pinned name must also resolve, and
must be defined where the front says (a front re-exports; it defines nothing itself).
"""

from __future__ import annotations

import importlib

import pytest

PINNED: dict[str, list[str]] = {
    "context": [
        "ADAPTER_NAMES", "AcquisitionOutcome", "AdapterName", "AnomalyType", "AssemblyRequest",
        "AttestationStatus", "AttestationCheck", "BlockedReason", "COUNT_THREADS", "Completeness",
        "ContextAssemblyBlocked", "ContextAssemblyManifest", "ContextError", "ContextItem",
        "ContextPolicy", "DataBlockError", "DataBlockView", "Detector", "ENCODING_NAME",
        "ESTIMATOR", "ExclusionReason", "FOLD_PREFIX", "GATE_ORDER", "Gate", "GateRunner",
        "INVISIBLE", "INVISIBLE_PATTERN", "InvariantViolation", "ItemDiff", "LINE_RANGE",
        "LOG_PREFIX", "LineageNode", "MISSING_EVIDENCE_HEADING", "ManifestDiff", "ModelSpec",
        "Partition", "PolicyError",
        "PreservationFailed", "PrincipalContext", "Ready", "RequestError", "Role",
        "SECURITY_LEVEL", "ScopeRef", "SecurityClass", "SerializationError",
        "SerializedRequest", "SourceAcquisition", "SourceRef", "SourceType", "TokenCounter",
        "ToolCall", "ToolDefinition", "ToolHistory", "ToolHistoryError", "ToolResult",
        "ToolStatus", "TopicSpec", "TransformRecord", "Trust", "aged_call_ids", "assemble",
        "block_citation", "canonical_argument_hash", "canonical_json", "count_tokens",
        "data_block", "default_counter", "detector_for", "diff_manifests", "folds_history",
        "get_adapter",
        "has_invisible", "is_policy_name", "load_policy", "load_yaml", "one_line",
        "parse_data_blocks", "policy_from_mapping", "redact_arguments", "redact_secrets",
        "reset_caches", "sha256_text", "shared_prefix_tokens",
    ],
    "artifacts": [
        "ArtifactKind", "ArtifactNotFound", "ArtifactRecord", "ArtifactStore",
        "DatabaseUnavailable", "IntegrityError", "InvalidArtifact", "Principal",
        "RevisionConflict", "SchemaNotReady", "Scope", "ScopeDenied", "SealedConflict",
        "Store", "StoreError", "content_hash", "json_hash", "open_store",
    ],
    # the contracts and workflows fronts name modules, not classes: importing one message
    # module must not load the others (the workflow sandbox imports them one by one); the
    # client, presentation and cli fronts export nothing either
    "contracts": ["activity_messages", "errors", "failures", "identifiers", "job_spec",
                  "path_safety", "source_specs", "workflow_messages"],
    "workflows": [],
    "client": [],
    "presentation": [],
    "cli": [],
    "activities": ["ACTIVITY_NAMES", "ActivityRuntime", "build_activities"],
    "webconsole": ["ConsoleBackend", "ConsoleConfig", "DraftUnavailable", "NotVisible",
                   "create_app"],
    "settings": [
        "DB_FILENAME", "DEFAULT_ADDRESS", "DEFAULT_NAMESPACE", "DEFAULT_TASK_QUEUE",
        "DEFAULT_WORKER_DRAIN_SECONDS", "DEFAULT_WORKER_GRACE_SECONDS", "DEPRECATED_NAMES",
        "VARIABLES", "Settings", "SettingsError", "Variable", "fixtures_from_env",
        "home_from_env", "load", "parse_health_address", "parse_helper_count", "parse_port",
    ],
}


@pytest.mark.parametrize("package", sorted(PINNED))
def test_front_exports_exactly_the_pinned_names(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(PINNED[package])


@pytest.mark.parametrize("package", sorted(PINNED))
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name, None)
        if value is None:  # a module named by the front: importable on its own
            value = importlib.import_module(f"{package}.{name}")
        assert value is not None, f"{package}.{name}"


def test_context_front_defines_nothing_itself() -> None:
    """Every class or function ``context`` exports lives in one of its modules."""
    import inspect

    import context

    for name in context.__all__:
        if not (inspect.isclass(getattr(context, name))
                or inspect.isfunction(getattr(context, name))):
            continue  # a constant (a tuple, a compiled pattern …) has no module of its own
        defined_in = getattr(getattr(context, name), "__module__", "context.x")
        assert defined_in.startswith("context.") and defined_in != "context", name


# ------------------------------------------------- outside code uses context's front only

#: code outside the engine (the layers above it, the console, evals, bench, the entry
#: points) imports ``context`` itself, never one of its modules
OUTSIDE = ("activities", "workflows", "webconsole", "evals", "bench", "cli",
           "pressroom.py", "worker.py", "settings.py")
#: the exceptions, each with its reason: white-box benchmarks that time the engine's own
#: stages, its token counter's private passes and its needle scanner
SUBMODULE_IMPORTS_ALLOWED = {
    "bench/assemble.py": {"context.admission", "context.assembly", "context.budget",
                          "context.seal", "context.tools", "context.admission.needles"},
    "bench/assemble_floor.py": {"context.admission.needles", "context.tokens"},
}


def context_submodule_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every ``context.<submodule>`` import in ``source`` (imports inside
    functions included)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, m) for m in modules if m.startswith("context.")]
    return found


def test_outside_code_imports_context_through_its_front() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = []
    for entry in OUTSIDE:
        path = root / entry
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.exists() else []
        for file in files:
            rel = file.relative_to(root).as_posix()
            allowed = SUBMODULE_IMPORTS_ALLOWED.get(rel, set())
            found += [f"{rel}:{line}: {module}"
                      for line, module in context_submodule_imports(file.read_text("utf-8"))
                      if module not in allowed]
    assert not found, ("import these from `context` (add the name to context/__init__.py's "
                       "__all__ if it is missing):\n" + "\n".join(found))


def test_the_import_scan_sees_every_form() -> None:
    source = ("from context.items import ContextItem\nimport context.tokens\n"
              "def f():\n    from context.seal import finish\nfrom context import assemble\n")
    assert [m for _, m in context_submodule_imports(source)] == [
        "context.items", "context.tokens", "context.seal"]
