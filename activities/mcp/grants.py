"""The worker's answer at submit to a job's MCP tool grants (``workflows.path_check``).

Why on the worker: the operator's server definitions are the worker's settings, which the
submitting client cannot see; ``pressroom run`` already asks a worker about the job's paths
before it starts the job, so the same check answers for its grants, in one line.
"""

from __future__ import annotations

from contracts.activity_messages import PathCheckResult
from contracts.job_spec import JobSpec
from contracts.mcp_servers import McpGrantRefused, McpServers, check_grants


def grants_refusal(spec: JobSpec, servers: McpServers | None) -> PathCheckResult | None:
    """``None`` when every grant names a defined server and tool, else the refusal."""
    try:
        check_grants(spec.tools, servers)
    except McpGrantRefused as refused:
        return PathCheckResult(refusal=f"{refused} (McpGrantRefused)")
    return None
