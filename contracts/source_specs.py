"""What a job asks to acquire: source specs and topic terms.

Specs are plain pydantic data carried through workflow history, so they hold locations as
the job wrote them — possibly with a ``${PRESSROOM_FIXTURES}`` or ``${PRESSROOM_HOME}``
placeholder — and are expanded only on the worker that runs the acquisition
(``expand_location``). That keeps tool-call arguments and their hashes identical across
machines whose fixture directories differ.

They are contracts, not acquisition code: the job spec embeds them and a ``resolve`` signal
can carry one, so the workflow needs them without importing ``activities.sources``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from context.vocabulary import SecurityClass, Trust
from contracts.errors import SourceSpecError
from settings import fixtures_from_env, home_from_env

_PLACEHOLDER = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

# A document spec may lower its trust (a plan file is project-editable data) but never
# claim more than official external evidence: authority is not self-declared.
DOCUMENT_TRUSTS: frozenset[Trust] = frozenset(
    {Trust.EXTERNAL_EVIDENCE, Trust.PROJECT_EDITABLE, Trust.UNTRUSTED_EXTERNAL_DATA}
)


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=_NAME, description="short stable id; used in citations")
    security_class: SecurityClass = SecurityClass.INTERNAL


class GitSourceSpec(_Spec):
    """A git repository read at one pinned commit (never its working tree)."""

    kind: Literal["git"] = "git"
    repo: str = Field(min_length=1, description="local path (may use placeholders) or URL")
    commit: str = Field(min_length=1, max_length=200, description="sha, tag or branch")
    paths: list[str] = Field(
        default_factory=list,
        description="files or directories (path prefixes, not globs); empty = whole tree",
    )

    @field_validator("commit")
    @classmethod
    def _commit_is_a_revision(cls, value: str) -> str:
        if value.startswith("-") or any(c.isspace() for c in value) or ".." in value:
            raise ValueError(f"commit {value!r} is not a single revision")
        return value

    @field_validator("paths")
    @classmethod
    def _paths_are_relative(cls, value: list[str]) -> list[str]:
        for p in value:
            if not p or p.startswith(("/", "-", ":")) or ".." in Path(p).parts:
                raise ValueError(f"path {p!r} must be relative to the repository root")
        return value


class DocumentSourceSpec(_Spec):
    """A local document (md/txt) or a folder of them."""

    kind: Literal["document"] = "document"
    path: str = Field(min_length=1)
    trust: Trust = Trust.EXTERNAL_EVIDENCE

    @field_validator("trust")
    @classmethod
    def _trust_not_self_promoted(cls, value: Trust) -> Trust:
        if value not in DOCUMENT_TRUSTS:
            allowed = ", ".join(sorted(DOCUMENT_TRUSTS))
            raise ValueError(f"a document source may not claim trust {value}; use one of {allowed}")
        return value


class WebPageSourceSpec(_Spec):
    """A saved web page (HTML or text file) and the URL it was saved from."""

    kind: Literal["web_page"] = "web_page"
    path: str = Field(min_length=1)
    url: str = Field(min_length=1)


SourceSpec = Annotated[
    GitSourceSpec | DocumentSourceSpec | WebPageSourceSpec, Field(discriminator="kind")
]


class TopicTerms(BaseModel):
    """A topic the article must cover and the terms that find evidence for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    terms: list[str] = Field(min_length=1)

    @field_validator("terms")
    @classmethod
    def _terms_nonblank(cls, value: list[str]) -> list[str]:
        for t in value:
            if not t.strip() or "\n" in t:
                raise ValueError(f"search term {t!r} must be one non-blank line")
        return value


def expand_location(value: str, locations: Mapping[str, str]) -> str:
    """Replace ``${PRESSROOM_FIXTURES}`` / ``${PRESSROOM_HOME}`` in a spec location.

    ``locations`` is what they stand for on the machine that reads the source (the worker
    passes ``Settings.locations``; read the same way as the variables, ``~`` expanded).
    Any other placeholder is a ``SourceSpecError`` naming it, instead of a path that
    silently does not exist.
    """
    known = {
        "PRESSROOM_FIXTURES": str(fixtures_from_env(locations)),
        "PRESSROOM_HOME": str(home_from_env(locations)),
    }

    def _sub(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in known:
            raise SourceSpecError(
                f"unknown placeholder ${{{key}}} in {value!r}; known: "
                + ", ".join(f"${{{k}}}" for k in sorted(known))
            )
        return known[key]

    return _PLACEHOLDER.sub(_sub, value)
