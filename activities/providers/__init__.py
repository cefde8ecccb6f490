"""Model providers: ``get_provider(name, **config)`` → an object with ``complete(...)``.

``extractive`` (offline, deterministic default: the research agent decides research
turns, drafts are composed extractively), ``openai`` (also OpenAI-compatible
servers: the worker's default via ``OPENAI_BASE_URL``, or a job's ``model.base_url`` from the
operator's allow-list, ``provider_for``) and ``anthropic``. Errors: ``ProviderError`` and its
subclasses in ``contracts.errors``.

``ADAPTERS`` says which request shape each provider sends (``None``: any — the offline
provider reads either); ``pressroom check`` refuses a pair that cannot work at submit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from activities.providers.base import ModelProvider, ProviderResult
from activities.providers.extractive import ExtractiveProvider, compose
from activities.providers.payload import RequestView, read_request
from activities.providers.remote import AnthropicProvider, OpenAIProvider
from activities.providers.research_agent import OfflineProvider
from contracts.errors import ProviderConfigError
from contracts.job_spec import ModelSpecInput
from contracts.model_endpoints import (
    DEFAULT_KEY_ENV,
    OPENAI_BASE_URL,
    PROVIDER_ADAPTERS,
    PROVIDER_KEY_ENV,
    ModelEndpointRefused,
    ModelEndpoints,
    endpoint_of,
)

PROVIDERS: dict[str, type[Any]] = {
    "extractive": OfflineProvider,
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
}


#: the request shape each provider sends and its key's variable (``contracts.model_endpoints``,
#: which the provider classes below match)
ADAPTERS = PROVIDER_ADAPTERS
KEY_ENV = PROVIDER_KEY_ENV
#: what the official SDK is handed for an endpoint the operator says needs no key (it
#: refuses to build a client without one); never a secret
NO_KEY = "no-key-needed"


def provider_for(model: ModelSpecInput, endpoints: ModelEndpoints,
                 environ: Mapping[str, str] | None = None) -> ModelProvider:
    """The provider a job's ``model`` names, at the endpoint it names — only one on the
    operator's list (``contracts.model_endpoints``) — with that endpoint's key: the variable
    its entry names, nothing for an entry that needs none, else the provider's own."""
    env = os.environ if environ is None else environ
    if model.base_url is not None and model.provider != "openai":
        raise ProviderConfigError(f"model.base_url is only for provider 'openai' "
                                  f"(OpenAI-compatible servers), not {model.provider!r}")
    if model.provider != "openai":
        return get_provider(model.provider, model=model.name)
    endpoint = endpoint_of(model, endpoints, env)
    config: dict[str, Any] = {"model": model.name}
    if endpoint is not None:
        key = env.get(endpoint.key_env) or None
        if key is None and endpoint.key_required:
            raise ProviderConfigError(f"{endpoint.key_env} is not set; endpoint "
                                      f"{endpoint.name!r} needs a key")
        config["api_key"] = key or NO_KEY
        config["base_url"] = endpoint.url
    return get_provider(model.provider, **config)


def get_provider(name: str, **config: Any) -> ModelProvider:
    """The provider called ``name``, configured with ``config`` (e.g. ``model=...``)."""
    try:
        cls = PROVIDERS[name]
    except KeyError:
        raise ProviderConfigError(
            f"unknown model provider {name!r}; known: {', '.join(sorted(PROVIDERS))}"
        ) from None
    try:
        provider: ModelProvider = cls(**config)
    except TypeError as exc:
        raise ProviderConfigError(f"bad configuration for provider {name!r}: {exc}") from exc
    return provider


__all__ = [
    "ADAPTERS",
    "DEFAULT_KEY_ENV",
    "KEY_ENV",
    "NO_KEY",
    "OPENAI_BASE_URL",
    "PROVIDERS",
    "AnthropicProvider",
    "ExtractiveProvider",
    "ModelEndpointRefused",
    "ModelProvider",
    "OfflineProvider",
    "OpenAIProvider",
    "ProviderResult",
    "RequestView",
    "compose",
    "endpoint_of",
    "get_provider",
    "provider_for",
    "read_request",
]
