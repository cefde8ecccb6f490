"""The client-side job API over Temporal, shared by every entry point.

``jobs`` starts, queries, signals and lists jobs (the typed calls on
``ResearchJobWorkflow``); ``errors`` holds the client-side errors (``JobNotFound``,
``TemporalUnavailable``, …); ``connection`` resolves and opens the Temporal connection
from the settings; ``devserver`` runs the local Temporal dev server (and finds free
ports); ``visibility_admin`` registers the search attributes on a namespace. The CLI
(``cli``), the worker (``worker.py``), the review console (``webconsole``), the benchmark
and the evals import it; it imports ``workflows`` (for the workflow's types), ``contracts``
and ``settings``, never ``cli``, ``presentation`` or ``webconsole``
(tests/test_architecture.py).

Import names from their modules; this package exports nothing itself.
"""

__all__: list[str] = []  # by design: see above
