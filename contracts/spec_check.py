"""Every check a job spec can be given without Temporal, in one place, as a list of problems.

Why a list: a spec author fixing a file wants every mistake at once, one line each naming
the field, not the first one per attempt — and before this, a wrong model setting (an
unknown provider, ``anthropic`` with the default ``openai_chat`` adapter, a missing key)
surfaced only at the first model call, after planning. ``pressroom check`` prints these
problems and exits 1 if there is any; ``pressroom run`` runs the same checks before it
connects to Temporal (docs/configuration.md, "Checking a spec").

What is checked: the schema (``contracts.job_spec``); every path against the operator's
roots (``contracts.path_safety``, when roots are given: ``run`` leaves paths to a worker on
the job's task queue, whose roots are the ones that count); the reviewers against the
reviewer registry (the caller's check, ``cli.reviewer_keys.check_reviewers``); the
provider known and its adapter compatible (``contracts.model_endpoints.PROVIDER_ADAPTERS``); a
``model.base_url`` on the operator's endpoint list (``contracts.model_endpoints``); the model
key present for a remote provider unless the operator's entry for the endpoint says it needs
none; the policy loadable; the topics usable by the research tools; and a cost budget's
model priced.

Nothing here writes, connects or starts anything; the only reads are the spec, the files it
names (inside the roots), the policy, the registry, the operator's endpoint and price files,
and whether the key variables are set (never their values). Messages name fields and
paths, never a key or a file's content.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from context.errors import ContextError
from context.policy import is_policy_name
from contracts.errors import JobError, JobSpecError, SourceError, WebUrlRefused
from contracts.job_spec import MAX_SEARCH_QUERY_CHARS as MAX_QUERY_CHARS
from contracts.job_spec import JobSpec, load_job_spec
from contracts.model_endpoints import (
    PROVIDER_ADAPTERS,
    PROVIDER_KEY_ENV,
    ModelEndpointError,
    ModelEndpointRefused,
    ModelEndpoints,
    endpoint_of,
    load_endpoints,
)
from contracts.path_safety import PathRoots, check_job_path, job_paths, read_policy
from contracts.pricing import PriceError, load_prices
from contracts.web_policy import WebFetchPolicy, check_url
from settings import MODEL_ENDPOINTS, PRICES, Settings

__all__ = ["CheckContext", "ProblemKind", "ReviewerCheck", "SpecProblem", "check_spec",
           "check_spec_file", "context_for"]

ProblemKind = Literal["file", "schema", "path", "url", "reviewer", "provider", "endpoint", "key",
                      "policy", "topic", "price", "settings"]
_WORD = re.compile(r"\w")
#: checks a spec's reviewers against the registry, raising a ``JobError`` naming them
ReviewerCheck = Callable[[JobSpec], object]


class SpecProblem(BaseModel):
    """One problem: the field it is in (``model.adapter``, ``sources.0.path``…), its kind,
    and what is wrong."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str
    kind: ProblemKind
    message: str

    def line(self) -> str:
        """The problem as one line that starts with the field (a schema problem says its
        field, and line, already)."""
        text = " ".join(self.message.split())
        if self.kind in ("schema", "file"):
            return text
        return f"{self.field}: " + text.replace(f"field '{self.field}': ", "")


@dataclass(frozen=True)
class CheckContext:
    """What the checks compare a spec against. ``roots``: the operator's roots the paths
    must lie inside (``None``: the paths are not checked here — ``run`` asks a worker).
    ``environ``: the environment the model would be called from — only whether a key
    variable is set is read, and ``OPENAI_BASE_URL`` (``None``: keys are not checked).
    ``endpoints``: the operator's endpoint list. ``reviewers``: raises a ``JobError``
    naming the reviewers the registry cannot vouch for (the client's registry code,
    ``cli.reviewer_keys.check_reviewers``, passed in: this layer cannot import it);
    ``None``: reviewers are not checked."""

    settings: Settings
    endpoints: ModelEndpoints
    roots: PathRoots | None
    environ: Mapping[str, str] | None
    reviewers: ReviewerCheck | None = None


def context_for(settings: Settings, *, roots: PathRoots | None,
                environ: Mapping[str, str] | None, reviewers: ReviewerCheck | None = None,
                ) -> tuple[CheckContext, list[SpecProblem]]:
    """The context ``settings`` give, and a problem for an endpoint file that cannot be
    used (an empty list is used then, so every ``base_url`` is refused)."""
    problems: list[SpecProblem] = []
    try:
        endpoints = load_endpoints(settings.model_endpoints)
    except ModelEndpointError as exc:
        endpoints = ModelEndpoints()
        problems.append(SpecProblem(field=MODEL_ENDPOINTS, kind="settings",
                                    message=f"{MODEL_ENDPOINTS}: {exc}"))
    return CheckContext(settings=settings, endpoints=endpoints, roots=roots,
                        environ=environ, reviewers=reviewers), problems


def check_spec_file(path: Path, ctx: CheckContext) -> tuple[JobSpec | None, list[SpecProblem]]:
    """The spec at ``path`` and every problem found in it (the schema's first: a spec that
    does not parse is checked no further)."""
    try:
        spec = load_job_spec(path)
    except JobSpecError as exc:
        if exc.problems:
            return None, [SpecProblem(field=_field_of(p), kind="schema", message=p)
                          for p in exc.problems]
        return None, [SpecProblem(field="<file>", kind="file", message=str(exc))]
    return spec, check_spec(spec, ctx)


def _field_of(part: str) -> str:
    match = re.search(r"field '([^']*)'", part) or re.search(r"key in '([^']*)'", part)
    return match.group(1) if match else "<root>"


def check_spec(spec: JobSpec, ctx: CheckContext) -> list[SpecProblem]:
    """Every problem of a spec that parsed, in field order."""
    problems: list[SpecProblem] = []
    if ctx.roots is not None:
        problems += _paths(spec, ctx.roots, ctx.settings)
        problems += _urls(spec, ctx.settings)
    problems += _reviewers(spec, ctx.reviewers)
    problems += _model(spec, ctx)
    problems += _policy(spec, ctx.settings)
    problems += _topics(spec)
    problems += _price(spec, ctx.settings)
    return problems


def _urls(spec: JobSpec, settings: Settings) -> list[SpecProblem]:
    """Each live web page's URL against the operator's web allow-list
    (``PRESSROOM_WEB_ALLOWED_DOMAINS``), as the worker checks it at submit: no network."""
    try:
        policy = WebFetchPolicy(allowed_domains=settings.web_allowed_domains,
                                allowed_networks=settings.web_allowed_networks)
    except ValidationError as exc:
        problem = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        return [SpecProblem(field="sources", kind="url",
                            message=f"the operator's web rules: {problem}")]
    problems = []
    for index, source in enumerate(spec.sources):
        url = source.fetched_url()
        if url is not None:
            try:
                check_url(url, policy)
            except WebUrlRefused as exc:
                problems.append(SpecProblem(field=f"sources.{index}.url", kind="url",
                                            message=exc.message))
    return problems


def _path_fields(spec: JobSpec) -> list[str]:
    """The field of each path ``job_paths`` yields, in its order."""
    fields = [f"sources.{i}.{s.location_field}"
              for i, s in enumerate(spec.sources) if s.local_path() is not None]
    if spec.workspace:
        fields.append("workspace")
    if not is_policy_name(spec.policy):
        fields.append("policy")
    fields.append("destination")
    return fields


def _paths(spec: JobSpec, roots: PathRoots, settings: Settings) -> list[SpecProblem]:
    roots = roots.for_tenant(spec.scope.tenant)
    problems = []
    try:
        named = list(job_paths(spec, settings.locations))
    except SourceError as exc:  # a location that cannot be expanded
        return [SpecProblem(field="sources", kind="path", message=str(exc))]
    for field, (what, path, kind, types) in zip(_path_fields(spec), named, strict=True):
        try:
            check_job_path(what, path, kind, types, roots)
        except (JobError, ContextError, SourceError, OSError) as exc:
            problems.append(SpecProblem(field=field, kind="path", message=str(exc)))
    return problems


def _reviewers(spec: JobSpec, check: ReviewerCheck | None) -> list[SpecProblem]:
    if check is None:
        return []
    try:
        check(spec)
    except JobError as exc:
        text = str(exc).removeprefix(f"job spec {spec.job_id}: ")
        return [SpecProblem(field="review.reviewers", kind="reviewer", message=text)]
    return []


def _model(spec: JobSpec, ctx: CheckContext) -> list[SpecProblem]:
    model = spec.model
    if model.provider not in PROVIDER_ADAPTERS:
        return [SpecProblem(field="model.provider", kind="provider",
                            message=f"unknown provider {model.provider!r}; known: "
                                    f"{', '.join(sorted(PROVIDER_ADAPTERS))}")]
    problems = []
    needs = PROVIDER_ADAPTERS[model.provider]
    if needs is not None and model.adapter != needs:
        problems.append(SpecProblem(
            field="model.adapter", kind="provider",
            message=f"provider {model.provider!r} sends {needs!r} requests, not "
                    f"{model.adapter!r}: set `adapter: {needs}`"))
    if model.base_url is not None and model.provider != "openai":
        return [*problems, SpecProblem(
            field="model.base_url", kind="endpoint",
            message=f"only provider 'openai' (OpenAI-compatible servers) takes a base_url, "
                    f"not {model.provider!r}")]
    if model.provider not in PROVIDER_KEY_ENV:
        return problems  # computed here: no endpoint, no key
    environ = ctx.environ or {}
    try:
        endpoint = (endpoint_of(model, ctx.endpoints, environ)
                    if model.provider == "openai" else None)
    except ModelEndpointRefused as exc:
        return [*problems, SpecProblem(field="model.base_url", kind="endpoint",
                                       message=str(exc))]
    if ctx.environ is None:
        return problems
    variable = endpoint.key_env if endpoint is not None else PROVIDER_KEY_ENV[model.provider]
    required = endpoint.key_required if endpoint is not None else True
    if required and not environ.get(variable):
        where = (f"endpoint {endpoint.name!r}" if endpoint is not None
                 else f"provider {model.provider!r}")
        problems.append(SpecProblem(
            field="model.base_url" if model.base_url is not None else "model.provider",
            kind="key",
            message=f"{variable} is not set; {where} needs an API key (the operator may "
                    "list a server that needs none with `key_required: false` in "
                    f"{MODEL_ENDPOINTS})"))
    return problems


def _policy(spec: JobSpec, settings: Settings) -> list[SpecProblem]:
    """The policy read and validated where it is (as ``pressroom run`` reads it: whether a
    job may read there is the roots' check, above)."""
    try:
        read_policy(spec.policy, PathRoots.of(settings, sources=(Path(spec.policy).parent,)))
    except (ContextError, JobError, OSError) as exc:
        return [SpecProblem(field="policy", kind="policy", message=str(exc))]
    return []


def _topics(spec: JobSpec) -> list[SpecProblem]:
    """Terms the research tools can use: with a letter or digit (a term of punctuation
    matches no word) and no longer than a search query may be."""
    problems = []
    for i, topic in enumerate(spec.topics):
        for j, term in enumerate(topic.terms):
            field = f"topics.{i}.terms.{j}"
            if not _WORD.search(term):
                problems.append(SpecProblem(field=field, kind="topic",
                                            message="has no letter or digit, so it matches "
                                                    "no word of any source"))
            elif len(term) > MAX_QUERY_CHARS:
                problems.append(SpecProblem(field=field, kind="topic",
                                            message=f"is longer than a search query may be "
                                                    f"({MAX_QUERY_CHARS} characters)"))
    return problems


def _price(spec: JobSpec, settings: Settings) -> list[SpecProblem]:
    if spec.research.cost_budget_usd is None:
        return []
    field = "research.cost_budget_usd"
    try:
        table = load_prices(settings.prices)
    except PriceError as exc:
        return [SpecProblem(field=PRICES, kind="settings", message=f"{PRICES}: {exc}")]
    if table.price_of(spec.model.provider, spec.model.name) is None:
        model = f"{spec.model.provider}/{spec.model.name}"
        return [SpecProblem(field=field, kind="price",
                            message=f"is set but model {model} has no price in "
                                    f"{table.describe}: add models.{spec.model.provider}."
                                    f"{spec.model.name} to the price file {PRICES} names "
                                    "(docs/configuration.md#cost-in-money), or drop the "
                                    "cost budget")]
    return []
