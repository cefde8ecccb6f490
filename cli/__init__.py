"""The ``pressroom`` command line's side of the project (entry-side, beside ``pressroom.py``
and ``worker.py``).

``commands`` holds the bodies of the ``pressroom`` commands and their ``--json`` reports;
``embedded`` the demo and ``pressroom dev``; ``mcp_demo`` the MCP example's fixtures;
``doctor``, ``scaffold`` (``pressroom init``), ``watch`` (the live view), ``pins`` and
``resolution`` (what ``run`` and ``resolve`` build at submit), ``reviewer_keys`` (keys
and the reviewer registry from the command line) and ``health`` (the worker's health
endpoint). It drives jobs through ``client`` and shows them through ``presentation``;
nothing but the entry points imports it — the review console in particular does not
(tests/test_architecture.py).

Import names from their modules; this package exports nothing itself.
"""

__all__: list[str] = []  # by design: see above
