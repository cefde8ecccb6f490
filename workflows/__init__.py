"""Pressroom's durable research job on Temporal: the workflow and what drives it.

``ResearchJobWorkflow`` (``research_job``) is deterministic workflow code; its data (job
spec, messages, activity inputs and results) lives in the ``contracts`` package, shared
with the activities without either importing the other; ``errors`` holds the client-side
errors; ``temporal_config`` wires converter, sandbox and failure types; ``client``,
``commands``, ``explain``, ``embedded``, ``devserver`` and ``resolution`` are the client
side used by the CLI, the demo, tests and the benchmark.

Import names from their modules; this package exports nothing itself, so importing one
client module does not load the workflow or the rest.
"""

__all__: list[str] = []  # by design: see above
