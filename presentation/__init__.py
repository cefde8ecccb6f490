"""What a job, a research turn and a context manifest look like as text.

``explain`` renders manifests (``pressroom explain``) and is the one reader of flagged
items and the attestation line; ``turns`` reads a job's research turns from the store and
gives the one-line forms of a call. Shared by the CLI (``cli``) and the review console
(``webconsole``), owned by neither: it imports neither of them, nor ``client`` or
``workflows`` (tests/test_architecture.py).

Import names from their modules; this package exports nothing itself.
"""

__all__: list[str] = []  # by design: see above
