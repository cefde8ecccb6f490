"""Submit-time pinning: a git source's ``ref`` becomes a commit id once, before the job starts.

Why here and only here. A job promises to read one commit; a tag or branch can move between
its steps, between its retries and between the jobs that share a worker's clone cache — and
resolving a name inside that shared cache would let one job's fetch decide what another
reads. So the worker resolves nothing (``activities.sources.gitrepo`` refuses a source
without a full commit id, ``UnpinnedSource``), and a spec may name a ``ref`` instead of a
``commit`` only because ``pressroom run`` resolves it here, once, and submits the spec with
both recorded: the commit the job reads and the name it came from. A later move of the tag
changes nothing for the job; ``pressroom resolve --add-source`` pins the same way.

A URL is asked with ``git ls-remote``; a local repository (``${PRESSROOM_FIXTURES}`` /
``${PRESSROOM_HOME}`` expanded with the settings' locations) with ``git rev-parse --verify
<ref>^{commit}`` — in that folder's own repository, never a parent one git would find
above it (``contracts.git_safety``; the submit check has refused such a folder already).
A plain name is looked up as ``refs/tags/<name>`` and ``refs/heads/<name>``
(a name that is both, at different commits, is refused as ambiguous); ``refs/...`` and
``HEAD`` are looked up as written. User text is never an option: locations follow ``--``
or ``-C``, names are safe ref names (``contracts.source_specs.ref_name_problem``) and follow
``--`` / ``--end-of-options``. A ref that does not resolve is ``UnresolvedRef`` and nothing
starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable, Mapping, Sequence

from client.errors import UnresolvedRef
from contracts.errors import SourceSpecError
from contracts.git_safety import git_invocation
from contracts.job_spec import JobSpec
from contracts.source_specs import (
    REMOTE_LOCATION,
    GitSourceSpec,
    SourceSpec,
    expand_location,
    is_object_id,
)
from contracts.workflow_messages import ResolveInput

#: how long one ``ls-remote`` / ``rev-parse`` may take before the submit gives up
TIMEOUT_S = 60.0

Report = Callable[[str], object]


async def pin_refs(spec: JobSpec, locations: Mapping[str, str], report: Report) -> JobSpec:
    """``spec`` with every git source that has a ``ref`` and no ``commit`` pinned to the
    commit the ref names now (``ref`` kept); ``report`` gets one line per resolution."""
    sources = [await pin_source(s, locations, report) for s in spec.sources]
    if all(new is old for new, old in zip(sources, spec.sources, strict=True)):
        return spec
    return spec.model_copy(update={"sources": sources})


async def pin_resolution(resolution: ResolveInput, locations: Mapping[str, str],
                         report: Report) -> ResolveInput:
    """A ``resolve`` that adds a source, with that source pinned like ``pin_refs`` does."""
    if resolution.source is None:
        return resolution
    source = await pin_source(resolution.source, locations, report)
    return resolution if source is resolution.source else resolution.model_copy(
        update={"source": source})


async def pin_source(source: SourceSpec, locations: Mapping[str, str],
                     report: Report) -> SourceSpec:
    """``source`` itself, or — a git source with only a ``ref`` — a copy with the commit."""
    if not isinstance(source, GitSourceSpec) or source.commit is not None or source.ref is None:
        return source
    try:
        location = expand_location(source.repo, locations)
    except SourceSpecError as exc:
        raise UnresolvedRef(f"source {source.name!r}: {exc}") from None
    sha = await resolve_ref(location, source.ref, name=source.name)
    report(f"pinned {source.name}: ref {source.ref} → commit {sha}")
    return GitSourceSpec.model_validate({**source.model_dump(), "commit": sha})


def _candidates(ref: str) -> list[str]:
    return [ref] if ref == "HEAD" or ref.startswith("refs/") else [f"refs/tags/{ref}",
                                                                   f"refs/heads/{ref}"]


async def resolve_ref(location: str, ref: str, *, name: str) -> str:
    """The commit id ``ref`` names in the repository at ``location`` (URL or directory)."""
    where = f"source {name!r}: ref {ref!r} in {location}"
    if REMOTE_LOCATION.match(location):
        found = await _remote(location, ref, where)
    else:
        found = await _local(location, ref, where)
    if not found:
        raise UnresolvedRef(f"{where} names no tag or branch; give an existing tag or branch, "
                            "or the full commit id as `commit:`")
    if len(set(found.values())) > 1:
        listed = ", ".join(f"{k} → {v[:12]}" for k, v in sorted(found.items()))
        raise UnresolvedRef(f"{where} is ambiguous ({listed}); write refs/tags/{ref} or "
                            f"refs/heads/{ref}")
    [sha] = set(found.values())
    return sha


async def _remote(url: str, ref: str, where: str) -> dict[str, str]:
    """``ls-remote``: full ref name → commit (an annotated tag by its peeled ``^{}`` line)."""
    wanted = _candidates(ref)
    patterns = [p for c in wanted for p in (c, c + "^{}")]
    # git runs in an empty folder of its own: never inside whatever repository the CLI's
    # working folder is (its config would apply), and never above it (contracts.git_safety)
    with tempfile.TemporaryDirectory(prefix="pressroom-ls-remote-") as neutral:
        out = await _git(neutral, ["ls-remote", "--", url, *patterns], where)
    direct: dict[str, str] = {}
    peeled: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, refname = line.partition("\t")
        if refname.endswith("^{}") and refname[:-3] in wanted:
            peeled[refname[:-3]] = sha
        elif refname in wanted:
            direct[refname] = sha
    found = {k: peeled.get(k, v) for k, v in direct.items()}
    bad = {k: v for k, v in found.items() if not is_object_id(v)}
    if bad:
        raise UnresolvedRef(f"{where}: ls-remote gave no object id ({bad})")
    return found


async def _local(path: str, ref: str, where: str) -> dict[str, str]:
    """``rev-parse --verify <candidate>^{commit}`` in the repository at ``path``."""
    found: dict[str, str] = {}
    for candidate in _candidates(ref):
        code, out, _ = await _run(path, ["rev-parse", "--verify", "--quiet",
                                         "--end-of-options", f"{candidate}^{{commit}}"], where)
        sha = out.strip()
        if code == 0 and is_object_id(sha):
            found[candidate] = sha
        elif code not in (0, 1):  # 128: not a repository (or no such directory)
            raise UnresolvedRef(f"{where}: {path} is not a git repository")
    return found


async def _git(folder: str, args: Sequence[str], where: str) -> str:
    code, out, err = await _run(folder, args, where)
    if code != 0:
        lines = err.strip().splitlines()
        raise UnresolvedRef(f"{where}: the repository cannot be read (git {args[0]} exited "
                            f"{code}: {lines[0] if lines else 'no output'})")
    return out


async def _run(folder: str, args: Sequence[str], where: str) -> tuple[int, str, str]:
    """``git -C folder args``, confined to ``folder`` (``contracts.git_safety``)."""
    argv, env = git_invocation(folder, *args)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env)
    except FileNotFoundError:
        raise UnresolvedRef(f"{where}: git is not installed here") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise UnresolvedRef(f"{where}: git timed out after {TIMEOUT_S:g}s") from None
    code = -1 if proc.returncode is None else proc.returncode
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
