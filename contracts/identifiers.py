"""Names a job spec hands to the artifact store, checked by the store's own rule at submit.

The job's principal, its reviewers and operators, its tenant, project and task, its id and
its source names all become store identifiers on the worker (``artifacts.Principal``,
``artifacts.Scope``, artifact and run ids). A name the store refuses — a reviewer called
``ops/alice`` — used to pass the spec and then fail the store write (``record_review``) on
every retry. ``StoreName`` applies the store's rule (``artifacts.ids.identifier_problem``,
defined once, there: the store cannot import ``contracts``) when a spec is parsed, so such
a spec is one error at ``pressroom run`` and at ``client.jobs.start_job``.

The message says what is wrong and never quotes the name: a job spec's values may come from
a file nobody meant to show (``context.file_errors``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from artifacts.ids import identifier_problem

__all__ = ["StoreName", "store_name"]


def store_name(value: str) -> str:
    """``value`` if the artifact store accepts it as an identifier, else ``ValueError``."""
    problem = identifier_problem(value)
    if problem is not None:
        raise ValueError(f"not a name the artifact store accepts: it {problem}")
    return value


#: a ``str`` field whose value becomes an artifact-store identifier
StoreName = Annotated[str, AfterValidator(store_name)]
