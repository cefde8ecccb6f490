"""Hypothesis profiles of the fuzzing tests.

``ci`` (the default) is bounded so the whole folder runs in well under a minute on two
cores; ``long`` runs many more examples per test, for a nightly job or a hunt by hand::

    PRESSROOM_FUZZ=long .venv/bin/python -m pytest tests/fuzz

The profiles are applied per test (``fuzz``), never loaded globally, so the rest of the
suite keeps Hypothesis's defaults and its own ``@settings``.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

#: the environment variable choosing the profile (tests/README.md, "Test and benchmark hooks")
PROFILE_VARIABLE = "PRESSROOM_FUZZ"
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
          HealthCheck.large_base_example]

settings.register_profile("ci", max_examples=100, deadline=None, print_blob=True,
                          suppress_health_check=_QUIET)
settings.register_profile("long", max_examples=3000, deadline=None, print_blob=True,
                          suppress_health_check=_QUIET)


def profile_name() -> str:
    name = os.environ.get(PROFILE_VARIABLE, "").strip() or "ci"
    if name not in ("ci", "long"):
        raise pytest.UsageError(f"{PROFILE_VARIABLE} must be 'ci' or 'long', got {name!r}")
    return name


def fuzz(share: float = 1.0) -> settings:
    """The active profile's settings, with ``share`` of its examples (a slow target, like
    the context engine, runs fewer than a loader)."""
    base = settings.get_profile(profile_name())
    return settings(base, max_examples=max(1, int(base.max_examples * share)))
