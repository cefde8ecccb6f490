"""The registry of source kinds: the one place that maps a spec's ``kind:`` to its reader.

Every reader of a declared source — the research tools' ``open_source``, a note's
evidence (``record_turn``), the job policy's read limits (``tool_call.read_limits``) —
asks ``source_kind``. A kind that is not registered is ``UnknownSourceKind``, a typed
error naming the kinds there are; nothing falls through to another kind's reader. Adding
a kind is its spec model in ``contracts.source_specs``, one module here implementing
``SourceKind``, and its entry below (docs/architecture.md#source-kinds-and-research-tools);
``tests/sources/test_source_kinds.py`` keeps this registry equal to the spec models.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from activities.sources.document import DocumentKind
from activities.sources.git import GitKind
from activities.sources.kind import SourceKind
from activities.sources.web_page import WebPageKind
from contracts.errors import UnknownSourceKind

__all__ = ["SOURCE_KINDS", "UnknownSourceKind", "source_kind"]


def _registry(*kinds: SourceKind) -> Mapping[str, SourceKind]:
    registry: dict[str, SourceKind] = {}
    for kind in kinds:
        if kind.name in registry:
            raise ValueError(f"source kind {kind.name!r} registered twice")
        registry[kind.name] = kind
    return MappingProxyType(registry)


#: every source kind, by its ``kind:`` value
SOURCE_KINDS: Mapping[str, SourceKind] = _registry(GitKind(), DocumentKind(), WebPageKind())


def source_kind(spec_or_name: Any) -> SourceKind:
    """The kind of a source spec (or a ``kind:`` value); ``UnknownSourceKind`` if none."""
    name = spec_or_name if isinstance(spec_or_name, str) else getattr(spec_or_name, "kind",
                                                                        None)
    kind = SOURCE_KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise UnknownSourceKind(f"no source kind {str(name)[:64]!r}; the kinds are "
                                f"{sorted(SOURCE_KINDS)}")
    if not isinstance(spec_or_name, str | kind.spec_model):
        raise UnknownSourceKind(f"a {type(spec_or_name).__name__} is not a {name} source spec")
    return kind
