"""MCP servers as tool sources (docs/mcp.md).

The operator defines servers (``contracts.mcp_servers``); a job is granted some of their
tools. ``listing`` records a job's tool list once and offers it to the model as
``mcp__<server>__<tool>``; ``calls`` runs one call inside ``run_tool`` (reserved, deadline,
gated result); ``tool`` is the research tool every ``mcp__`` name is (how a note cites a
result); ``grants`` answers at submit;
``client`` is the one place that talks MCP (the official SDK, v2). The rest of the runtime
calls in at one place each: the tool registry (``activities.research_tools.registry``),
the request's tool definitions (``activities.context_activity``) and the grant check
(``activities.registry``, ``store_activities``). This package imports none of those, so
they can import it.
"""
