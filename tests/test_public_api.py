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
        "AssemblyRequest", "ContextAssemblyBlocked", "ContextAssemblyManifest",
        "ContextError", "ContextItem", "ContextPolicy", "ESTIMATOR", "InvariantViolation",
        "LineageNode", "ModelSpec", "PolicyError", "PreservationFailed", "PrincipalContext",
        "Ready", "RequestError", "ScopeRef", "SerializationError", "SerializedRequest",
        "SourceAcquisition", "SourceRef", "TokenCounter", "ToolCall", "ToolDefinition",
        "ToolHistory", "ToolHistoryError", "ToolResult", "TopicSpec", "TransformRecord",
        "assemble", "count_tokens", "load_policy", "policy_from_mapping", "reset_caches",
        "sha256_text",
    ],
    "artifacts": [
        "ArtifactKind", "ArtifactNotFound", "ArtifactRecord", "ArtifactStore",
        "DatabaseUnavailable", "IntegrityError", "InvalidArtifact", "Principal",
        "RevisionConflict", "SchemaNotReady", "Scope", "ScopeDenied", "SealedConflict",
        "Store", "StoreError", "content_hash", "json_hash", "open_store",
    ],
    # the contracts and workflows fronts name modules, not classes: importing one message
    # module must not load the others (the workflow sandbox imports them one by one)
    "contracts": ["activity_messages", "errors", "failures", "identifiers", "job_spec",
                  "path_safety", "source_specs", "workflow_messages"],
    "workflows": [],
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
    import context

    for name in context.__all__:
        defined_in = getattr(getattr(context, name), "__module__", "context.x")
        assert defined_in.startswith("context.") and defined_in != "context", name
