"""Pressroom's durable research job on Temporal: workflow-side code only.

``ResearchJobWorkflow`` (``research_job``) is deterministic workflow code, and
``CheckJobPathsWorkflow`` (``path_check``) the short workflow a submit asks the worker's
own filesystem through; their data (job spec, messages, activity inputs and results) lives
in the ``contracts`` package, shared with the activities without either importing the
other; ``temporal_config`` wires converter, sandbox and failure types; ``visibility`` holds
the search attributes the workflow upserts. This package imports only ``contracts`` and its
own modules (tests/test_architecture.py). The client side lives elsewhere: ``client`` (the
job API over Temporal, its errors and connection), ``presentation`` (what a job, a turn, a
manifest look like as text) and ``cli`` (the ``pressroom`` commands).

Import names from their modules; this package exports nothing itself, so importing one
module does not load the workflow or the rest.
"""

__all__: list[str] = []  # by design: see above
