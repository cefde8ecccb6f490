"""Pressroom's context engine: pure, synchronous, deterministic assembly of model input.

``assemble(request)`` runs the pipeline (docs/context-engine.md#the-pipeline-stage-by-stage) —
hard gates, ranking and coverage, load modes, structure and tool pairing, source limits,
partition budgets on real token counts, checked transforms, provider serialization — and
returns ``Ready`` (the exact provider request and its sealed manifest) or
``ContextAssemblyBlocked`` (a sealed manifest with ``status="blocked"``; no model call may
follow). ``load_policy`` reads a shipped or custom policy; ``count_tokens`` counts text or a
chat request with framing. Errors: see ``context.errors``.

This module is the engine's front: code outside ``context/`` (activities, workflows, the
console, evals, bench, the entry points) imports these names from ``context`` and none of
its modules (``tests/test_public_api.py`` pins both the names and that rule). Besides the
entry points above it offers the vocabulary, the data-block and secret-redaction helpers,
the token counter's constants and the tool-history helpers that the layers above use.
"""

from context.admission.gates import GateRunner
from context.admission.security import Detector, detector_for, redact_arguments, redact_secrets
from context.assembly.engine import ContextAssemblyBlocked, Ready, assemble, reset_caches
from context.errors import (
    ContextError,
    InvariantViolation,
    PolicyError,
    RequestError,
    ToolHistoryError,
)
from context.file_errors import load_yaml, one_line
from context.invisible import INVISIBLE, has_invisible
from context.invisible import PATTERN as INVISIBLE_PATTERN
from context.items import (
    AttestationCheck,
    ContextItem,
    LineageNode,
    ScopeRef,
    SourceAcquisition,
    SourceRef,
    sha256_text,
)
from context.limits.blocks import LINE_RANGE, block_citation
from context.manifest import ContextAssemblyManifest
from context.manifest_diff import ItemDiff, ManifestDiff, diff_manifests
from context.policy import ContextPolicy, is_policy_name, load_policy, policy_from_mapping
from context.request import AssemblyRequest, ModelSpec, PrincipalContext, TopicSpec
from context.seal.adapters import SerializationError, SerializedRequest, get_adapter
from context.seal.cache import shared_prefix_tokens
from context.seal.render import (
    MISSING_EVIDENCE_HEADING,
    DataBlockError,
    DataBlockView,
    data_block,
    parse_data_blocks,
)
from context.tokens import (
    COUNT_THREADS,
    ENCODING_NAME,
    ESTIMATOR,
    TokenCounter,
    canonical_json,
    count_tokens,
    default_counter,
)
from context.tool_history import (
    ToolCall,
    ToolDefinition,
    ToolHistory,
    ToolResult,
    canonical_argument_hash,
)
from context.tools.aging import aged_call_ids, folds_history
from context.tools.fold import FOLD_PREFIX, LOG_PREFIX
from context.tools.transforms import PreservationFailed, TransformRecord
from context.vocabulary import (
    ADAPTER_NAMES,
    GATE_ORDER,
    SECURITY_LEVEL,
    AcquisitionOutcome,
    AdapterName,
    AnomalyType,
    AttestationStatus,
    BlockedReason,
    Completeness,
    ExclusionReason,
    Gate,
    Partition,
    Role,
    SecurityClass,
    SourceType,
    ToolStatus,
    Trust,
)

__all__ = [
    "ADAPTER_NAMES",
    "COUNT_THREADS",
    "ENCODING_NAME",
    "ESTIMATOR",
    "FOLD_PREFIX",
    "GATE_ORDER",
    "INVISIBLE",
    "INVISIBLE_PATTERN",
    "LINE_RANGE",
    "LOG_PREFIX",
    "MISSING_EVIDENCE_HEADING",
    "SECURITY_LEVEL",
    "AcquisitionOutcome",
    "AdapterName",
    "AnomalyType",
    "AssemblyRequest",
    "AttestationCheck",
    "AttestationStatus",
    "BlockedReason",
    "Completeness",
    "ContextAssemblyBlocked",
    "ContextAssemblyManifest",
    "ContextError",
    "ContextItem",
    "ContextPolicy",
    "DataBlockError",
    "DataBlockView",
    "Detector",
    "ExclusionReason",
    "Gate",
    "GateRunner",
    "InvariantViolation",
    "ItemDiff",
    "LineageNode",
    "ManifestDiff",
    "ModelSpec",
    "Partition",
    "PolicyError",
    "PreservationFailed",
    "PrincipalContext",
    "Ready",
    "RequestError",
    "Role",
    "ScopeRef",
    "SecurityClass",
    "SerializationError",
    "SerializedRequest",
    "SourceAcquisition",
    "SourceRef",
    "SourceType",
    "TokenCounter",
    "ToolCall",
    "ToolDefinition",
    "ToolHistory",
    "ToolHistoryError",
    "ToolResult",
    "ToolStatus",
    "TopicSpec",
    "TransformRecord",
    "Trust",
    "aged_call_ids",
    "assemble",
    "block_citation",
    "canonical_argument_hash",
    "canonical_json",
    "count_tokens",
    "data_block",
    "default_counter",
    "detector_for",
    "diff_manifests",
    "folds_history",
    "get_adapter",
    "has_invisible",
    "is_policy_name",
    "load_policy",
    "load_yaml",
    "one_line",
    "parse_data_blocks",
    "policy_from_mapping",
    "redact_arguments",
    "redact_secrets",
    "reset_caches",
    "sha256_text",
    "shared_prefix_tokens",
]
