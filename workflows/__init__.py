"""Pressroom's durable research job on Temporal: the workflow and what drives it.

``ResearchJobWorkflow`` (``research_job``) is deterministic workflow code; ``job_spec``,
``models`` and ``errors`` are its data; ``temporal_config`` wires converter, sandbox and
failure types; ``client``, ``commands``, ``explain``, ``embedded``, ``devserver`` and
``resolution`` are the client side used by the CLI, the demo, tests and the benchmark.

Names are resolved lazily: activities import ``workflows.job_spec`` and must not pull in
the workflow module (which imports the activity contracts) while they load.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ResearchJobWorkflow": "workflows.research_job",
    "JobSpec": "workflows.job_spec",
    "load_job_spec": "workflows.job_spec",
    "parse_job_spec": "workflows.job_spec",
    "JobError": "workflows.errors",
    "JobSpecError": "workflows.errors",
    "JobResult": "workflows.models",
    "JobStatus": "workflows.models",
    "ReviewInput": "workflows.models",
    "ResolveInput": "workflows.models",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'workflows' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
