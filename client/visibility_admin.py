"""Registering the job's search attributes on a namespace (client side; never imported by
the workflow). ``workflows.visibility`` defines them.

``ensure_search_attributes`` adds the missing ones through the operator service and is
idempotent; the worker calls it at startup. A cluster whose operator service the worker
may not use (permission denied, or not offered — Temporal Cloud) gets one clear
``SearchAttributesMissing`` naming the ``temporal operator search-attribute create``
command to run instead; jobs there still run, without visibility, until it is run.
"""

from __future__ import annotations

from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from client.errors import SearchAttributesMissing
from workflows.visibility import SEARCH_ATTRIBUTE_TYPES, cli_type_name, create_command

__all__ = ["ensure_search_attributes", "missing_search_attributes"]

_NOT_ALLOWED = (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED,
                RPCStatusCode.UNAUTHENTICATED)


async def _registered(client: Client, namespace: str) -> dict[str, int]:
    resp = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace))
    return {**dict(resp.system_attributes), **dict(resp.custom_attributes)}


async def missing_search_attributes(client: Client, namespace: str | None = None) -> list[str]:
    """The Pressroom attributes ``namespace`` (default: the client's) does not have yet; one
    registered under another type is a ``SearchAttributesMissing``."""
    namespace = namespace or client.namespace
    registered = await _registered(client, namespace)
    wrong = [name for name, kind in SEARCH_ATTRIBUTE_TYPES.items()
             if name in registered and registered[name] != kind]
    if wrong:
        raise SearchAttributesMissing(
            f"namespace {namespace!r} has search attribute(s) {', '.join(wrong)} with another "
            f"type than Pressroom needs ({', '.join(f'{n}={cli_type_name(n)}' for n in wrong)}); "
            "remove them (temporal operator search-attribute remove) and create them again: "
            f"{create_command(wrong, namespace)}")
    return [name for name in SEARCH_ATTRIBUTE_TYPES if name not in registered]


async def ensure_search_attributes(client: Client, namespace: str | None = None) -> list[str]:
    """Register every missing Pressroom search attribute on ``namespace`` (default: the
    client's); returns the names added (none when all were there: idempotent).

    When this client may not register them, ``SearchAttributesMissing`` says which are
    missing and the command an operator must run.
    """
    namespace = namespace or client.namespace
    try:
        missing = await missing_search_attributes(client, namespace)
        if missing:
            await client.operator_service.add_search_attributes(AddSearchAttributesRequest(
                namespace=namespace,
                search_attributes={name: SEARCH_ATTRIBUTE_TYPES[name] for name in missing}))
    except RPCError as exc:
        if exc.status not in _NOT_ALLOWED:
            raise
        raise SearchAttributesMissing(
            f"cannot check or register Pressroom's search attributes on namespace "
            f"{namespace!r} ({exc.status.name if exc.status else 'refused'}); an operator "
            f"must run: {create_command(None, namespace)}") from None
    return missing
