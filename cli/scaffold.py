"""``pressroom init``: a commented job spec written from a few flags, which ``check`` accepts.

Why: a newcomer should not have to reverse-engineer ``examples/job.yaml`` and
``contracts/job_spec.py`` to run a first job. ``init`` writes every field a spec needs, each
with a comment saying what it does, and fills in what it can:

* git sources are pinned as ``pressroom run`` pins them (``cli.pins``): ``--repo
  PATH@REF`` records the ref and the commit it names now (``HEAD`` without ``@REF``);
* topics and their terms are suggested from the question, deterministically: its content
  words (``content_words``: lower-cased, stopwords and short words dropped, first
  occurrence kept), so the same question always gives the same file. Topics decide whether
  the model's ``finish`` is accepted (one verified note per topic), so only the first few
  become topics and the rest are listed in a comment.

The spec is validated (``contracts.job_spec.parse_job_spec``) before it is written, and an
existing file is never replaced unless asked (``force``). Nothing else is written.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cli.pins import Report, resolve_ref
from contracts.errors import JobError, SourceSpecError
from contracts.job_spec import parse_job_spec
from contracts.source_specs import REMOTE_LOCATION, expand_location

__all__ = ["InitError", "InitRequest", "content_words", "render_spec", "write_spec"]

#: how many content words become topics (each needs a verified note before ``finish``)
MAX_TOPICS = 3
#: how many content words are listed at all
MAX_WORDS = 12

#: common English words that say nothing about a topic (a question's function words and
#: the verbs questions are asked with)
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each either else
ever every few for from further get gets got had has have having he her here hers him his
how however i if in into is it its itself just let lets like may me might more most much
must my no nor not now of off on once only or other our ours out over own per same shall
she should so some such than that the their theirs them then there these they this those
through to too under until up upon us use used uses using very via was we were what when
where whether which while who whom whose why will with within without would you your yours
explain describe tell show compare work works happen happens handle handles make makes
""".split())

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
_NAME_BAD = re.compile(r"[^A-Za-z0-9._-]+")


class InitError(JobError):
    """``pressroom init`` cannot write the spec asked for; the message names the flag."""


def content_words(question: str) -> list[str]:
    """The question's content words in order of first occurrence: lower-cased, without
    stopwords, words under three characters and plain numbers."""
    seen: dict[str, None] = {}
    for raw in _WORD.findall(question):
        word = raw.lower().strip("._-")
        if len(word) < 3 or word in STOPWORDS or word.replace(".", "").isdigit():
            continue
        seen.setdefault(word, None)
    return list(seen)[:MAX_WORDS]


def _terms(word: str) -> list[str]:
    """A topic's terms: the word, and its singular when it looks like a plural (a search
    for ``retry`` then finds ``retries`` too — matching is by substring)."""
    terms = [word]
    if word.endswith("ies") and len(word) > 4:
        terms.append(word[:-3] + "y")
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 4:
        terms.append(word[:-1])
    return terms


def _name(text: str, taken: set[str]) -> str:
    """A source name (``contracts.source_specs``: ``[A-Za-z0-9][A-Za-z0-9._-]{0,63}``) from a
    path's last part, made unique among ``taken``."""
    base = _NAME_BAD.sub("-", text).strip("-._")[:56] or "source"
    if not base[0].isalnum():
        base = "s" + base
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


@dataclass(frozen=True)
class InitRequest:
    """What ``pressroom init``'s flags asked for."""

    question: str
    repos: Sequence[str] = ()
    docs: Sequence[str] = ()
    pages: Sequence[str] = ()
    reviewers: Sequence[str] = ()
    destination: Path | None = None
    job_id: str | None = None
    principal: str = "research-agent"
    tenant: str = "local"
    project: str = "research"
    locations: Mapping[str, str] = field(default_factory=dict)


def _split_repo(value: str) -> tuple[str, str]:
    """``PATH[@REF]`` → (location, ref); a URL's ``user@host`` is not a ref."""
    head, sep, ref = value.rpartition("@")
    if sep and head and "/" not in ref and ":" not in ref:
        return head, ref
    return value, "HEAD"


def _location(value: str, base: Path) -> str:
    """A local path made absolute (against the current folder, as typed on a command line);
    a URL or a placeholder location kept as written."""
    if REMOTE_LOCATION.match(value) or "${" in value or "://" in value:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


async def _sources(req: InitRequest, base: Path, report: Report) -> list[dict[str, Any]]:
    taken: set[str] = set()
    sources: list[dict[str, Any]] = []
    for value in req.repos:
        location, ref = _split_repo(value)
        repo = _location(location, base)
        name = _name(Path(location.rstrip("/")).name.removesuffix(".git"), taken)
        try:
            commit = await resolve_ref(expand_location(repo, req.locations), ref, name=name)
        except (JobError, SourceSpecError) as exc:
            raise InitError(f"--repo {value}: {exc}") from None
        report(f"pinned {name}: ref {ref} → commit {commit}")
        sources.append({"kind": "git", "name": name, "repo": repo, "commit": commit,
                        "ref": ref, "paths": []})
    for value in req.docs:
        path = _location(value, base)
        sources.append({"kind": "document", "name": _name(Path(path).name, taken),
                        "path": path})
    for value in req.pages:
        file, sep, url = value.partition("=")
        if not sep and re.match(r"^[a-z][a-z0-9+.-]*://", value, re.IGNORECASE):
            raise InitError(f"--page {value}: a web page is read from a saved copy, never "
                            "fetched; save it and give --page FILE=URL")
        path = _location(file, base)
        sources.append({"kind": "web_page", "name": _name(Path(path).stem, taken),
                        "path": path, "url": url or Path(path).as_uri()})
    if not sources:
        raise InitError("a job needs at least one source: give --repo, --docs or --page")
    return sources


def _job_id(words: Sequence[str]) -> str:
    """``<first content words>-<random>``: readable, and new each time (an id is never
    reused)."""
    stem = "-".join(words[:3]) or "job"
    stem = _NAME_BAD.sub("-", stem).strip("-._")[:60] or "job"
    return f"{stem}-{uuid.uuid4().hex[:6]}"


def _q(value: object) -> str:
    """A YAML scalar (JSON is YAML: strings are quoted, nothing is interpreted)."""
    return json.dumps(value, ensure_ascii=False)


async def render_spec(req: InitRequest, *, base: Path, home: Path,
                      report: Report) -> tuple[str, dict[str, Any]]:
    """The commented YAML text of the spec ``req`` asks for, and its data (validated)."""
    if not req.question.strip():
        raise InitError("--question must say something")
    if not req.reviewers:
        raise InitError("a job needs a reviewer: give --reviewer NAME (register its key "
                        "first: `pressroom reviewer keygen NAME --register`)")
    words = content_words(req.question)
    if not words:
        raise InitError("--question has no content word to suggest a topic from")
    topics = [{"name": w, "terms": _terms(w)} for w in words[:MAX_TOPICS]]
    sources = await _sources(req, base, report)
    job_id = req.job_id or _job_id(words)
    destination = str(req.destination.expanduser().resolve() if req.destination
                      else home / "published")
    data: dict[str, Any] = {
        "job_id": job_id, "question": req.question.strip(), "topics": topics,
        "principal": req.principal,
        "scope": {"tenant": req.tenant, "project": req.project, "task": job_id},
        "sources": sources, "forbidden_actions": [], "destination": destination,
        "policy": "default",
        "review": {"reviewers": list(req.reviewers), "timeout": "7d", "max_revisions": 3},
    }
    parse_job_spec(data, origin="written by pressroom init")  # JobSpecError names the field
    lines = [
        "# A Pressroom job spec written by `pressroom init`. Check it with",
        "# `pressroom check FILE` and start it with `pressroom run FILE --wait`",
        "# (docs/configuration.md lists every field).",
        "",
        "# the job's id, also its Temporal workflow id: never reused",
        f"job_id: {_q(job_id)}",
        "# what the article answers",
        f"question: {_q(data['question'])}",
        "# Topics the article must cover. The model's `finish` is accepted only once every",
        "# topic has a verified note (a note quoting a source line that mentions one of its",
        "# terms); terms also drive relevance. Suggested from the question's content words:",
        f"# {', '.join(words)}",
        "topics:",
    ]
    for topic in topics:
        lines += [f"  - name: {_q(topic['name'])}",
                  f"    terms: [{', '.join(_q(t) for t in topic['terms'])}]"]
    lines += [
        "# the identity the job acts as; it may never review its own draft",
        f"principal: {_q(req.principal)}",
        "# where the job's records live in the artifact store",
        "scope:",
        f"  tenant: {_q(req.tenant)}",
        f"  project: {_q(req.project)}",
        f"  task: {_q(job_id)}",
        "# What the job may read. Every path must lie inside the worker's source roots",
        "# (PRESSROOM_SOURCE_ROOTS or `--source-root`); a git source is read at one commit.",
        "sources:",
    ]
    for source in sources:
        lines.append(f"  - kind: {source['kind']}")
        lines.append(f"    name: {_q(source['name'])}")
        if source["kind"] == "git":
            lines += [f"    repo: {_q(source['repo'])}",
                      f"    commit: {_q(source['commit'])}   # pinned by init from the ref",
                      f"    ref: {_q(source['ref'])}",
                      "    paths: []   # path prefixes to read; empty: the whole tree"]
        else:
            lines.append(f"    path: {_q(source['path'])}")
            if source["kind"] == "web_page":
                lines.append(f"    url: {_q(source['url'])}   # where the page was saved from")
    lines += [
        "# Written into the prompts only: the model is told not to do these; nothing",
        "# enforces them (review and publish are enforced by the workflow itself).",
        "forbidden_actions: []",
        "# where the approved article is published (<destination>/<job_id>/<job_id>.md);",
        "# it must lie inside the worker's publish roots",
        f"destination: {_q(destination)}",
        "# the context policy: a shipped name (`default`) or a policy file",
        "policy: default",
        "review:",
        "  # By name: `pressroom run` pins each reviewer's public key from the registry",
        "  # ($PRESSROOM_HOME/reviewers; `pressroom reviewer keygen NAME --register`).",
        f"  reviewers: [{', '.join(_q(r) for r in req.reviewers)}]",
        "  timeout: 7d   # how long the job waits for a decision",
        "  max_revisions: 3",
        "# The model: `extractive` is offline and deterministic. For a real model:",
        "#   provider: openai      (adapter: openai_chat; key OPENAI_API_KEY)",
        "#   provider: anthropic   (adapter: anthropic_messages; key ANTHROPIC_API_KEY)",
        "#   base_url: an OpenAI-compatible endpoint the operator lists in",
        "#             PRESSROOM_MODEL_ENDPOINTS (provider openai only)",
        "model:",
        "  provider: extractive",
        "  name: extractive-v1",
        "",
    ]
    text = "\n".join(lines)
    written = yaml.safe_load(text)
    if written != {**data, "model": {"provider": "extractive", "name": "extractive-v1"}}:
        raise AssertionError("pressroom init rendered a spec that does not read back")
    return text, data


async def write_spec(req: InitRequest, output: Path, *, force: bool, base: Path, home: Path,
                     report: Report) -> dict[str, Any]:
    """Render ``req`` and write it to ``output``; an existing file is refused unless
    ``force``."""
    if os.path.lexists(output) and not force:
        raise InitError(f"{output} already exists; pass --force to replace it")
    text, data = await render_spec(req, base=base, home=home, report=report)
    try:
        # "x": never replace a file that appeared meanwhile unless asked to
        with output.open("w" if force else "x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise InitError(f"{output} already exists; pass --force to replace it") from None
    except OSError as exc:
        raise InitError(f"cannot write {output}: {exc.strerror or exc}") from None
    return data
