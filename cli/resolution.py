"""Turning ``pressroom resolve`` flags into one ``ResolveInput`` (or a clear error).

No flag is ``retry``: a blocked step assembles again, a step that needs an operator runs
again. ``--abandon`` ends a blocked job, or one that needs an operator, ``failed``."""

from __future__ import annotations

import re
from decimal import Decimal

import yaml
from pydantic import TypeAdapter, ValidationError

from context import load_yaml, one_line
from contracts.errors import JobError
from contracts.job_spec import yaml_error_line
from contracts.pricing import micro_usd
from contracts.source_specs import SourceSpec
from contracts.workflow_messages import ResolveInput

_SOURCE: TypeAdapter[SourceSpec] = TypeAdapter(SourceSpec)
#: a cost budget is whole micro-dollars at most (contracts/pricing.py)
_USD = re.compile(r"\$?(\d{1,7})(?:\.(\d{1,6}))?", re.ASCII)


def _usd(raw: str) -> int:
    """``--cost-budget``'s USD (``5``, ``0.25``, ``$12.50``) in micro-dollars, exactly."""
    found = _USD.fullmatch(raw.strip())
    micro = 0 if found is None else micro_usd(Decimal(raw.strip().lstrip("$")))
    if micro <= 0:
        raise JobError(f"--cost-budget must be a positive amount of USD with at most six "
                       f"decimals, got {raw!r}")
    return micro


def build_resolution(*, add_source: str | None = None, refresh: str | None = None,
                     budget: int | None = None, context_limit: int | None = None,
                     accept: str | None = None, token_budget: int | None = None,
                     accept_gathered: bool = False, abandon: bool = False,
                     note: str = "", cost_budget: str | None = None) -> ResolveInput:
    given = [name for name, v in (("--add-source", add_source), ("--refresh", refresh),
                                  ("--budget", budget), ("--context-limit", context_limit),
                                  ("--accept", accept), ("--token-budget", token_budget),
                                  ("--cost-budget", cost_budget),
                                  ("--accept-gathered", accept_gathered or None),
                                  ("--abandon", abandon or None))
             if v is not None]
    if len(given) > 1:
        raise JobError(f"give one resolution at a time, not {' and '.join(given)}")
    if add_source is not None:
        try:
            source = _SOURCE.validate_python(load_yaml(add_source))
        except yaml.YAMLError as exc:
            raise JobError(f"--add-source is not YAML: {yaml_error_line(exc)}") from None
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'source'}: {e['msg']}"
                for e in exc.errors())
            raise JobError(one_line(f"--add-source is not a valid source spec: {problems}")
                           ) from None
        return ResolveInput(action="add_source", source=source, note=note)
    if refresh is not None:
        return ResolveInput(action="refresh_source", source_name=refresh, note=note)
    if budget is not None:
        if budget <= 0:
            raise JobError(f"--budget must be a positive token count, got {budget}")
        return ResolveInput(action="raise_budget", evidence_budget=budget, note=note)
    if context_limit is not None:
        if context_limit <= 0:
            raise JobError(f"--context-limit must be a positive token count, got {context_limit}")
        return ResolveInput(action="raise_budget", context_limit=context_limit, note=note)
    if token_budget is not None:
        if token_budget <= 0:
            raise JobError(f"--token-budget must be a positive token count, got {token_budget}")
        return ResolveInput(action="raise_budget", token_budget=token_budget, note=note)
    if cost_budget is not None:
        return ResolveInput(action="raise_budget", cost_budget_micro_usd=_usd(cost_budget),
                            note=note)
    if accept_gathered:
        return ResolveInput(action="accept_gathered", note=note)
    if abandon:
        return ResolveInput(action="abandon", note=note)
    if accept is not None:
        key, sep, revision = accept.rpartition("=")
        if not sep or not key or not revision:
            raise JobError(f"--accept must be CANONICAL_KEY=REVISION, got {accept!r}")
        return ResolveInput(action="accept_revision", canonical_key=key, revision=revision,
                            note=note)
    return ResolveInput(action="retry", note=note)
