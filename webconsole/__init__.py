"""The review console: a web page where reviewers see each draft beside its evidence and
what the model saw, and approve, request changes or reject with a signed decision.

``pressroom web`` serves it (``webconsole.server``). Layout, one role per module:

* ``app`` — ``create_app``: the only module that knows every page; security headers.
* ``pages/`` — one module per page (sign-in, jobs, job, review, manifest), each given its
  ``Deps``; ``pages/common`` holds the sign-in door and rendering.
* ``backend`` — the one narrow interface to Temporal and the artifact store, and the
  visibility rule (a reviewer sees only jobs that list them).
* ``accounts`` (reviewer accounts, passwords, encrypted signing keys), ``sessions``
  (cookies, CSRF), ``throttle`` (password-guessing locks, the argon2 thread pool),
  ``audit`` (the audit log artifact), ``config``.
* ``evidence``, ``draft_html``, ``diff``, ``timeline``, ``shown`` — pure rendering helpers.

Exceptions: ``backend.NotVisible`` (a ``JobNotFound``: no such job, or it does not list
you), ``backend.DraftUnavailable`` (a ``JobError``), ``accounts.AccountError``; every
other refusal is the workflow's own ``JobError``, shown as one sentence.
"""

from webconsole.app import create_app
from webconsole.backend import ConsoleBackend, DraftUnavailable, NotVisible
from webconsole.config import ConsoleConfig

__all__ = ["ConsoleBackend", "ConsoleConfig", "DraftUnavailable", "NotVisible", "create_app"]
