"""Pressroom's context engine: pure, synchronous, deterministic assembly of model input.

``assemble(request)`` runs the pipeline (docs/context-engine.md#the-pipeline-stage-by-stage) —
hard gates, ranking and coverage, load modes, structure and tool pairing, source limits,
partition budgets on real token counts, checked transforms, provider serialization — and
returns ``Ready`` (the exact provider request and its sealed manifest) or
``ContextAssemblyBlocked`` (a sealed manifest with ``status="blocked"``; no model call may
follow). ``load_policy`` reads a shipped or custom policy; ``count_tokens`` counts text or a
chat request with framing. Errors: see ``context.errors``.
"""

from context.assembly.engine import ContextAssemblyBlocked, Ready, assemble, reset_caches
from context.errors import (
    ContextError,
    InvariantViolation,
    PolicyError,
    RequestError,
    ToolHistoryError,
)
from context.items import (
    ContextItem,
    LineageNode,
    ScopeRef,
    SourceAcquisition,
    SourceRef,
    sha256_text,
)
from context.manifest import ContextAssemblyManifest
from context.policy import ContextPolicy, load_policy, policy_from_mapping
from context.request import AssemblyRequest, ModelSpec, PrincipalContext, TopicSpec
from context.seal.adapters import SerializationError, SerializedRequest
from context.tokens import ESTIMATOR, TokenCounter, count_tokens
from context.tool_history import ToolCall, ToolDefinition, ToolHistory, ToolResult
from context.tools.transforms import PreservationFailed, TransformRecord

__all__ = [
    "ESTIMATOR",
    "AssemblyRequest",
    "ContextAssemblyBlocked",
    "ContextAssemblyManifest",
    "ContextError",
    "ContextItem",
    "ContextPolicy",
    "InvariantViolation",
    "LineageNode",
    "ModelSpec",
    "PolicyError",
    "PreservationFailed",
    "PrincipalContext",
    "Ready",
    "RequestError",
    "ScopeRef",
    "SerializationError",
    "SerializedRequest",
    "SourceAcquisition",
    "SourceRef",
    "TokenCounter",
    "ToolCall",
    "ToolDefinition",
    "ToolHistory",
    "ToolHistoryError",
    "ToolResult",
    "TopicSpec",
    "TransformRecord",
    "assemble",
    "count_tokens",
    "load_policy",
    "policy_from_mapping",
    "reset_caches",
    "sha256_text",
]
