"""The data Pressroom's workflow, activities and CLI exchange, owned by none of them.

The workflow (``workflows``) and the activities (``activities``) only meet through these
models: a job spec goes in, references come back, and each payload is what Temporal keeps
in history. Keeping them here lets each side import the contract without importing the
other, so the dependencies point one way: ``workflows`` → ``contracts`` ← ``activities``.
This package imports neither ``workflows`` nor ``activities``; only ``context`` (for the
security and trust vocabulary inside the specs) and the store's pure identifier rule
(``artifacts.ids``).

Modules (import names from them; this package re-exports nothing, so every name has one
home):

- ``job_spec`` — ``JobSpec``: what a user asks Pressroom to research; YAML loading.
- ``source_specs`` — the sources a job acquires (git, document, web page) and topic terms.
- ``workflow_messages`` — the workflow's input, state, update, signal, query and result.
- ``activity_messages`` — every activity's input and result (references, never content).
- ``errors`` — errors raised on one side of a boundary and named on the other.
- ``failures`` — which activity errors no retry can fix, found anywhere in a failure's
  chain (the worker marks them non-retryable; the workflow's retry policy names them).
- ``identifiers`` — ``StoreName``: a name the spec hands to the artifact store, checked
  by the store's own rule (``artifacts.ids``) when the spec is parsed.
- ``path_safety`` — the operator's roots for every path a job names, and reading and
  writing inside them (checked at submit and again on the worker).
"""

__all__ = [
    "activity_messages",
    "errors",
    "failures",
    "identifiers",
    "job_spec",
    "path_safety",
    "source_specs",
    "workflow_messages",
]
