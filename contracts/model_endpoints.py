"""The operator's allow-list of OpenAI-compatible model endpoints a job may name.

Why a list: a job spec is written by whoever submits it, and ``model.base_url`` is a URL the
*worker* sends the sealed request to — with the worker's API key. A job that could name any
URL could make the worker post its context, and its key, anywhere. So a job may only name an
endpoint the operator listed (``PRESSROOM_MODEL_ENDPOINTS``, a YAML file; docs/configuration.md),
and the operator says per endpoint whether it needs a key and which variable of the worker's
environment holds it. ``pressroom check`` / ``run`` refuse an unlisted URL at submit with the
client's list; the worker refuses it again with its own before calling the model
(``activities.providers.provider_for``).

The file::

    endpoints:
      - name: local-vllm
        url: http://127.0.0.1:8000/v1
        key_required: false          # a local server that needs no API key
      - name: gateway
        url: https://llm.example.com/v1
        key_env: GATEWAY_API_KEY     # the worker variable holding its key (default OPENAI_API_KEY)

A job without ``model.base_url`` uses the worker's default endpoint (``OPENAI_BASE_URL``, else
OpenAI's own); an entry whose ``url`` is that endpoint says whether *it* needs a key.

A file that cannot be used is a ``ModelEndpointError`` naming the file and the entry, never
quoting a value (an operator may have pasted a key where a variable name belongs).

``PROVIDER_ADAPTERS`` and ``PROVIDER_KEY_ENV`` say, for each provider a job may name, the
request shape it sends and the variable its key is read from: defined here, where the
submit-time check (``contracts.spec_check``) can read them, and matched by the provider
classes themselves (``activities.providers``; ``tests/providers/test_remote.py`` holds
them to it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from context.vocabulary import AdapterName
from contracts.errors import ProviderConfigError

__all__ = [
    "DEFAULT_KEY_ENV",
    "OPENAI_BASE_URL",
    "PROVIDER_ADAPTERS",
    "PROVIDER_KEY_ENV",
    "ModelEndpoint",
    "ModelEndpointError",
    "ModelEndpointRefused",
    "ModelEndpoints",
    "endpoint_of",
    "load_endpoints",
    "normalize_url",
]

#: the request shape (``model.adapter``) each provider sends; ``None``: any (the offline
#: provider reads either)
PROVIDER_ADAPTERS: dict[str, AdapterName | None] = {
    "extractive": None, "openai": "openai_chat", "anthropic": "anthropic_messages"}
#: the variable each remote provider's key is read from when no endpoint entry names another
PROVIDER_KEY_ENV: dict[str, str] = {"openai": "OPENAI_API_KEY",
                                    "anthropic": "ANTHROPIC_API_KEY"}
#: the variable naming the worker's default OpenAI-compatible endpoint
OPENAI_BASE_URL = "OPENAI_BASE_URL"

#: the variable an endpoint's key is read from when its entry names none
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: the largest endpoint file read (a few dozen entries fit in a few KB)
MAX_ENDPOINTS_BYTES = 64 * 1024
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_URL = re.compile(r"^https?://[^\s/?#]+(?:/[^\s?#]*)?$", re.IGNORECASE)


class ModelEndpointError(ValueError):
    """The endpoint file cannot be used; the message names the file and the entry."""


def normalize_url(url: str) -> str:
    """``url`` as compared against the list: surrounding space and trailing ``/`` dropped,
    scheme and host lower-cased (a path is compared as written)."""
    text = url.strip().rstrip("/")
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/]*)(.*)$", text)
    if match is None:
        return text
    return match.group(1).lower() + match.group(2).lower() + match.group(3)


class ModelEndpoint(BaseModel):
    """One endpoint the operator allows jobs to name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    url: str = Field(min_length=1, max_length=2000)
    #: ``False``: the server needs no API key (a local server); the worker sends a
    #: placeholder, since the official SDK insists on one
    key_required: bool = True
    #: the worker's environment variable holding this endpoint's key
    key_env: str = DEFAULT_KEY_ENV

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not _URL.match(value.strip()):
            raise ValueError("must be an http:// or https:// URL without a query")
        return normalize_url(value)

    @field_validator("key_env")
    @classmethod
    def _env(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            raise ValueError("must be an environment variable name")
        return value


class ModelEndpoints(BaseModel):
    """The allow-list; ``describe`` says where it came from (for messages)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoints: tuple[ModelEndpoint, ...] = ()
    describe: str = "no endpoint file (PRESSROOM_MODEL_ENDPOINTS unset)"

    def find(self, url: str | None) -> ModelEndpoint | None:
        """The listed endpoint at ``url`` (compared normalized), else ``None``."""
        if url is None:
            return None
        wanted = normalize_url(url)
        return next((e for e in self.endpoints if e.url == wanted), None)

    def names(self) -> list[str]:
        return [e.name for e in self.endpoints]


def load_endpoints(path: Path | None) -> ModelEndpoints:
    """The list in the file at ``path`` (``None``: an empty list — no job may name an
    endpoint); ``ModelEndpointError`` names the file and the entry at fault."""
    if path is None:
        return ModelEndpoints()
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_ENDPOINTS_BYTES + 1)
    except OSError as exc:
        raise ModelEndpointError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_ENDPOINTS_BYTES:
        raise ModelEndpointError(f"{path} is over {MAX_ENDPOINTS_BYTES} bytes")
    try:
        raw = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        raise ModelEndpointError(f"{path} is not valid UTF-8 YAML") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("endpoints", []), list):
        raise ModelEndpointError(f"{path}: expected a mapping with an `endpoints:` list")
    try:
        endpoints = ModelEndpoints(endpoints=tuple(raw.get("endpoints") or ()),
                                   describe=str(path))
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')}")
        raise ModelEndpointError(f"{path}: " + "; ".join(parts)) from None
    extra = set(raw) - {"endpoints"}
    if extra:
        raise ModelEndpointError(f"{path}: unknown top-level key(s) {sorted(extra)}")
    seen: set[str] = set()
    for field in ("name", "url"):
        seen.clear()
        for index, entry in enumerate(endpoints.endpoints):
            value = getattr(entry, field)
            if value in seen:
                raise ModelEndpointError(f"{path}: endpoints.{index}: the same {field} is "
                                         "listed twice")
            seen.add(value)
    return endpoints


class ModelEndpointRefused(ProviderConfigError):
    """A job names a ``model.base_url`` the endpoint list does not hold."""


def endpoint_of(model: Any, endpoints: ModelEndpoints,
                environ: Mapping[str, str]) -> ModelEndpoint | None:
    """The listed endpoint a job's ``model`` (``contracts.job_spec.ModelSpecInput``) calls:
    its ``base_url``'s entry (``ModelEndpointRefused`` when unlisted), else the entry of
    the default endpoint (``OPENAI_BASE_URL`` in ``environ``) if listed."""
    if model.base_url is None:
        return endpoints.find(environ.get(OPENAI_BASE_URL) or None)
    endpoint = endpoints.find(model.base_url)
    if endpoint is None:
        raise ModelEndpointRefused(
            f"model.base_url is not an endpoint this worker allows ({endpoints.describe}; "
            f"listed: {', '.join(endpoints.names()) or 'none'}): the operator adds it to "
            "the file PRESSROOM_MODEL_ENDPOINTS names")
    return endpoint
