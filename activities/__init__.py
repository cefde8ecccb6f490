"""Every side effect of a Pressroom job: store reads and writes, acquisition, model calls,
publishing — as Temporal activities (``registry.build_activities``) sharing one
``runtime.ActivityRuntime`` per worker. Their inputs and results are
``contracts.activity_messages``: the workflow addresses activities by name and shares only
those contracts with them, so nothing here imports ``workflows``.

Sub-packages ``sources`` (acquisition) and ``providers`` (models) are imported on their
own; names here are resolved lazily so importing a sub-package stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ActivityRuntime": "activities.runtime",
    "build_activities": "activities.registry",
    "ACTIVITY_NAMES": "activities.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'activities' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
