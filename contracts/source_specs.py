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
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from context.vocabulary import SecurityClass, Trust
from contracts.errors import SourceSpecError, WebUrlRefused
from contracts.identifiers import StoreName
from contracts.web_policy import url_host
from settings import fixtures_from_env, home_from_env

_PLACEHOLDER = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
#: ``scheme://user:secret@host`` or ``scheme://token@host`` with a token-like user part
_URL_CREDENTIALS = re.compile(
    r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/@\s:]*:[^/@\s]+|[^/@\s:]{20,})@")
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\s")
#: a repository location that git reaches over a transport, not a local directory
REMOTE_LOCATION = re.compile(r"^([a-z][a-z0-9+.-]*://|[^/@\s]+@[^/:\s]+:)", re.IGNORECASE)


def is_object_id(value: str) -> bool:
    """Whether ``value`` is a full lowercase git object id (SHA-1 or SHA-256)."""
    return _OBJECT_ID.fullmatch(value) is not None


def ref_name_problem(value: str) -> str | None:
    """Why ``value`` is not a safe tag or branch name (``git check-ref-format`` rules, plus
    no leading ``-``), or ``None``. A safe name can never be read by git as an option, a
    refspec (``src:dst``), a range or a revision expression."""
    if not value:
        return "it is empty"
    if value.startswith("-"):
        return "it starts with '-'"
    if _REF_FORBIDDEN.search(value):
        return "it holds whitespace, a control character or one of ~ ^ : ? * [ \\"
    if ".." in value or "@{" in value or value == "@":
        return "it holds '..' or '@{' (a revision expression, not a name)"
    if value.startswith("/") or value.endswith(("/", ".")) or "//" in value:
        return "it starts or ends with '/', ends with '.' or holds '//'"
    if any(part.startswith(".") or part.endswith(".lock") for part in value.split("/")):
        return "a component starts with '.' or ends with '.lock'"
    return None


def _not_an_id(value: str) -> str:
    if ":" in value:
        return "is a refspec, not a commit id (refspecs are never accepted)"
    if re.fullmatch(r"[0-9a-fA-F]{4,39}", value.strip()):
        return "is a short commit id, which can become ambiguous"
    return "is not a full commit id (40 or 64 hex digits)"


def _as_ref(value: str) -> str:
    hexish = re.fullmatch(r"[0-9a-fA-F]+", value.strip())
    return f" (`ref: {value}`)" if not hexish and ref_name_problem(value) is None else ""


# A document spec may lower its trust (a plan file is project-editable data) but never
# claim more than official external evidence: authority is not self-declared.
DOCUMENT_TRUSTS: frozenset[Trust] = frozenset(
    {Trust.EXTERNAL_EVIDENCE, Trust.PROJECT_EDITABLE, Trust.UNTRUSTED_EXTERNAL_DATA}
)


class _Spec(BaseModel):
    """What every source kind's spec has: a name, a security class, and the few facts the
    client side needs about a kind without importing its reader — the field that holds its
    location, the local path to check against the roots, how the plan describes it. The
    reader of each kind (how it is listed, read and cited) is its module under
    ``activities/sources/`` (docs/architecture.md#source-kinds-and-research-tools)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: StoreName = Field(pattern=_NAME, description="short stable id; used in citations")
    security_class: SecurityClass = SecurityClass.INTERNAL

    #: the field that holds where the source is (a path, a repository, a URL)
    location_field: ClassVar[str] = "path"

    @property
    def live(self) -> bool:
        """Whether the worker fetches this source over the network (a live web page)."""
        return self.fetched_url() is not None

    def fetched_url(self) -> str | None:
        """The URL the worker fetches this source from, to check against the operator's
        web rules (``contracts.web_policy``); ``None`` for a source read from disk."""
        return None

    def local_path(self) -> tuple[str, str, tuple[str, ...]] | None:
        """The local path this source names, to check against the operator's source roots
        (``contracts.path_safety``): (what it is, the location as written, the file types
        it may be); ``None`` for a source that names no local path."""
        return None

    def summary(self) -> str:
        """The kind and pin, as the task contract shows it (``git at commit …``)."""
        return spec_kind(type(self))

    def describe(self) -> str:
        """One line of the research plan: what the source is and where."""
        return f"{spec_kind(type(self))} {getattr(self, self.location_field)}"


class GitSourceSpec(_Spec):
    """A git repository read at one pinned commit (never its working tree).

    ``commit`` is the full object id (40 hex digits, or 64 in a SHA-256 repository) — the
    only thing the job ever reads. ``ref`` is the tag or branch it was resolved from, kept
    for the reader: a spec may name only ``ref``, which is parseable but not runnable until
    ``pressroom run`` resolves it once at submit and records both (``cli.pins``); the
    worker refuses to acquire a source without a commit (``UnpinnedSource``). A branch, tag,
    short id or refspec in ``commit`` is refused here, at parse time: a name can move
    between jobs, and a refspec would rewrite refs in the clone cache every job shares.
    """

    kind: Literal["git"] = "git"
    repo: str = Field(min_length=1, description="local path (may use placeholders) or URL")
    commit: str | None = Field(
        default=None, description="the full commit id (40 or 64 hex digits) the job reads")
    ref: str | None = Field(
        default=None, max_length=200,
        description="tag or branch the commit is (or is to be) resolved from at submit")
    paths: list[str] = Field(
        default_factory=list,
        description="files or directories (path prefixes, not globs); empty = whole tree",
    )

    location_field: ClassVar[str] = "repo"

    def local_path(self) -> tuple[str, str, tuple[str, ...]] | None:
        return "repository", self.repo, ("folder",)

    def summary(self) -> str:
        return f"git at commit {self.commit}"

    def describe(self) -> str:
        paths = f", paths {', '.join(self.paths)}" if self.paths else ""
        return f"git {self.repo} at commit {self.commit}{paths}"

    @field_validator("commit")
    @classmethod
    def _commit_is_an_object_id(cls, value: str | None) -> str | None:
        if value is None:
            return None
        sha = value.strip().lower()
        if is_object_id(sha):
            return sha
        raise ValueError(f"commit {value!r} {_not_an_id(value)}: use the full commit id, or "
                         f"`ref:` and let `pressroom run` resolve it{_as_ref(value)}")

    @field_validator("repo")
    @classmethod
    def _no_credentials_in_url(cls, value: str) -> str:
        # the spec travels in workflow history, manifests and tool-call arguments: a
        # password or token in the URL would reach all of them (SECURITY.md)
        if _URL_CREDENTIALS.match(value):
            raise ValueError("the repository URL carries a password or token; give the "
                             "worker git credentials (a credential helper) instead")
        return value

    @field_validator("ref")
    @classmethod
    def _ref_is_a_safe_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = ref_name_problem(value)
        if problem:
            raise ValueError(f"ref {value!r} is not a tag or branch name: {problem}")
        return value

    @model_validator(mode="after")
    def _commit_or_ref(self) -> GitSourceSpec:
        if self.commit is None and self.ref is None:
            raise ValueError("a git source needs `commit:` (the full commit id) or `ref:` (a "
                             "tag or branch that `pressroom run` resolves to one)")
        return self

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

    def local_path(self) -> tuple[str, str, tuple[str, ...]] | None:
        return "path", self.path, ("file", "folder")

    def describe(self) -> str:
        return f"document {self.path}"

    @field_validator("trust")
    @classmethod
    def _trust_not_self_promoted(cls, value: Trust) -> Trust:
        if value not in DOCUMENT_TRUSTS:
            allowed = ", ".join(sorted(DOCUMENT_TRUSTS))
            raise ValueError(f"a document source may not claim trust {value}; use one of {allowed}")
        return value


class WebPageSourceSpec(_Spec):
    """A web page: a saved copy (``path:``, an HTML or text file, and the ``url`` it was
    saved from), or — with no ``path`` — the live page at ``url``.

    A live page is fetched by the worker once, under the operator's rules
    (``contracts.web_policy``), and stored as a revision (``activities.sources.web_revisions``);
    every later read of the job uses that revision until ``pressroom resolve
    --refresh-source NAME`` fetches a new one. Its URL must be http(s) without credentials
    (checked here); whether its domain may be fetched is the worker's allow-list, checked
    at submit.
    """

    kind: Literal["web_page"] = "web_page"
    path: str | None = Field(default=None, min_length=1)
    url: str = Field(min_length=1, max_length=2000)

    @model_validator(mode="after")
    def _live_url_is_fetchable(self) -> WebPageSourceSpec:
        if self.path is None:
            try:
                url_host(self.url)  # scheme, host and no credentials: no network here
            except WebUrlRefused as exc:
                raise ValueError(exc.message) from None
        return self

    def fetched_url(self) -> str | None:
        return self.url if self.path is None else None

    def local_path(self) -> tuple[str, str, tuple[str, ...]] | None:
        return None if self.path is None else ("page", self.path, ("file",))

    def describe(self) -> str:
        saved = "live" if self.path is None else "saved"
        return f"{saved} web page {self.url} (untrusted data)"


#: every source kind's spec model, one per kind — the job spec's ``sources:`` accept exactly
#: these; each has its reader registered in ``activities.sources.registry``, and a test keeps
#: the two lists equal (docs/architecture.md#source-kinds-and-research-tools)
SOURCE_SPEC_MODELS: tuple[type[_Spec], ...] = (GitSourceSpec, DocumentSourceSpec,
                                               WebPageSourceSpec)

SourceSpec = Annotated[
    GitSourceSpec | DocumentSourceSpec | WebPageSourceSpec, Field(discriminator="kind")
]


def spec_kind(model: type[_Spec]) -> str:
    """The ``kind:`` a spec model stands for (its discriminator's one value)."""
    default = model.model_fields["kind"].default
    assert isinstance(default, str)
    return default


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
