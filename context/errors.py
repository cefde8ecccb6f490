"""Typed errors of the context engine, all in one place.

The hierarchy (every error names the offending field, key or id in its message)::

    ContextError                 base of everything the engine raises on bad input
    ├── PolicyError              a policy file or object is invalid: unknown key, bad value,
    │                            negative budget, unknown policy name, unreadable YAML
    ├── RequestError             an AssemblyRequest is invalid: malformed candidate, duplicate
    │                            item id, negative evidence budget, clearance/scope mismatch
    │   └── ToolHistoryError     the tool history itself is malformed (e.g. duplicate call id
    │                            with different arguments); orphan results are *not* errors,
    │                            they are recorded ``orphan_tool_result_dropped`` anomalies
    └── InvariantViolation       the engine caught itself breaking one of its own invariants
                                 (a bug, never bad input); raised instead of sealing a lie

Errors of the support modules (``SerializationError`` of the adapters, ``PreservationFailed``
of the transforms) are caught inside the pipeline and turn into a *blocked* manifest with a
``BlockedReason``, because at that point the request was valid and the outcome must be
recorded. A blocked assembly is a result (``ContextAssemblyBlocked``), not an exception.
"""

from __future__ import annotations


class ContextError(Exception):
    """Base class of every error the context engine raises on bad input."""


class PolicyError(ContextError):
    """A ``ContextPolicy`` (YAML or object) is invalid; the message names the key."""


class RequestError(ContextError):
    """An ``AssemblyRequest`` is invalid; the message names the field or item id."""


class ToolHistoryError(RequestError):
    """The tool history cannot be interpreted safely (the message names the call id)."""


class InvariantViolation(ContextError):
    """The engine detected a broken invariant of its own; sealing would record a lie."""
