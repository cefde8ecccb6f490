"""A worker's verdict on a spec's paths before the job starts, and the flags that would allow
a path its roots refuse.

``pressroom run`` cannot know the roots of the workers that will run a job — they are set
where each worker starts (``--source-root`` / ``--publish-root``, ``PRESSROOM_*_ROOTS``)
— so it asks one: ``workflows.path_check.CheckJobPathsWorkflow`` runs the activity
``check_job_paths_here`` on the job's task queue, and that activity calls ``verdict`` with
its worker's own roots. ``verdict`` runs exactly the check ``store_job_spec`` runs
(``contracts.path_safety.check_job_paths``, same arguments), so whatever that check
refuses the pre-check refuses, and whatever it allows starts.

What the verdict tells the submitter (SECURITY.md, "Paths a job names"): whether each path
*they* named is allowed, and why not — never the worker's roots. A path outside them is
reported as that path and the folder a root would need (``RefusedPath``); the other
refusals (``/proc``, a FIFO, Pressroom's own state, a repository that reaches out of its
folder) carry their own messages, which name the path and the reason and nothing else.

``allow_hint`` turns the refused paths into the commands that would allow them:
``pressroom dev --source-root FOLDER`` / ``pressroom worker --source-root FOLDER``
(``--publish-root`` for a destination).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from contracts.activity_messages import PathCheckResult, RefusedPath
from contracts.errors import PathOutsideRoots, PathOutsideTenantRoots, PathRefused
from contracts.job_spec import JobSpec
from contracts.path_safety import PathRoots, check_job_paths, job_paths, locate

__all__ = ["allow_hint", "outside_paths", "refusal_line", "verdict", "with_allow_hint"]

_FLAG = {"source": "--source-root", "publish": "--publish-root"}


def _folder(path: str) -> str:
    """The resolved folder a root must hold for ``path``: the path itself when it is a
    folder or does not exist yet (a destination is created), else the folder it is in."""
    real = Path(os.path.realpath(path))
    return str(real if real.is_dir() or not os.path.lexists(real) else real.parent)


def outside_paths(spec: JobSpec, roots: PathRoots,
                  locations: Mapping[str, str]) -> list[RefusedPath]:
    """Every path ``spec`` names that lies outside ``roots`` of its kind (``locate``'s
    root test, path by path — so one answer names them all, not only the first)."""
    found: list[RefusedPath] = []
    for what, path, kind, _types in job_paths(spec, locations):
        plain = path[len("file://"):] if path.lower().startswith("file://") else path
        try:
            locate(plain, roots, kind, what=what)
        except PathOutsideRoots:
            found.append(RefusedPath(what=what, path=path, kind=kind, folder=_folder(plain)))
        except PathRefused:
            continue  # refused for another reason, which the verdict's own check reports
    return found


def verdict(spec: JobSpec, roots: PathRoots, locations: Mapping[str, str]) -> PathCheckResult:
    """The worker's answer for ``spec``: ``check_job_paths`` with its own ``roots`` (what
    ``store_job_spec`` will run), as ``PathCheckResult`` — never its roots.

    A path outside the roots (``PathOutsideRoots`` or a subclass) is answered with the
    paths outside them, not the exception's message, which lists the roots; any other
    ``PathRefused`` is answered with its message (path and reason only)."""
    try:
        check_job_paths(spec, roots, locations)
    except PathOutsideRoots as exc:
        outside = outside_paths(spec, roots, locations)
        if isinstance(exc, PathOutsideTenantRoots):
            # the tenants' roots are the worker's too: name the path, the job's tenant and
            # the tenant that holds it (what the worker's own refusal says), never the roots
            named = [f"{what} {path}" for what, path, _kind, _types in
                     job_paths(spec, locations) if str(path) in str(exc)][:1]
            owner = re.search(r"it lies in tenant ('(?:[^'\\]|\\.)*')", str(exc))
            held = f"; it lies in the roots of tenant {owner.group(1)}" if owner else ""
            return PathCheckResult(refusal=f"{named[0] if named else 'a path'} is outside "
                                           f"the roots of tenant {spec.scope.tenant!r}{held} "
                                           "(PathOutsideTenantRoots)")
        if type(exc) is not PathOutsideRoots or not outside:
            # narrower roots than these refused it (a subclass says whose): no root flag of
            # a worker allows it, so name the path it refused and the error's type only
            named = [f"{what} {path}" for what, path, _kind, _types in
                     job_paths(spec, locations) if str(exc).startswith(f"{what} ")][:1]
            return PathCheckResult(refusal=f"{named[0] if named else 'a path'} is outside the "
                                           f"roots this worker allows the job "
                                           f"({type(exc).__name__})")
        return PathCheckResult(refusal=refusal_line(outside), outside=outside)
    except PathRefused as exc:
        return PathCheckResult(refusal=str(exc))
    return PathCheckResult()


def with_allow_hint(exc: PathOutsideRoots, spec: JobSpec, roots: PathRoots,
                    locations: Mapping[str, str]) -> PathOutsideRoots:
    """The worker's own refusal (``store_job_spec``) of a path outside its roots, saying
    first the flags that would allow it, then which paths, then the roots it has (a job's
    ``needs_operator`` reason is cut at its end). ``exc`` itself for a narrower refusal
    (a subclass), which no root flag answers."""
    outside = outside_paths(spec, roots, locations)
    if type(exc) is not PathOutsideRoots or not outside:
        return exc
    have = "; ".join(f"its {kind} roots: {roots.describe(kind)}"
                     for kind in sorted({p.kind for p in outside}))
    joined = _flags(outside, prefer=None)
    return PathOutsideRoots(f"allow with `pressroom worker {joined}` (or `pressroom dev` "
                            f"with the same flags): {refusal_line(outside)} — {have}")


def refusal_line(outside: Sequence[RefusedPath]) -> str:
    """``source 'lib' path /x/lib and destination /x/out are outside the roots of the
    worker``: the paths, as the spec names them."""
    named = [f"{p.what} {p.path}" for p in outside]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    verb = "is" if len(named) == 1 else "are"
    kinds = sorted({p.kind for p in outside})
    return f"{listed} {verb} outside the {' and '.join(kinds)} roots of the worker"


def allow_hint(outside: Sequence[RefusedPath], *, prefer: Path | None = None) -> str:
    """The flags that would allow ``outside``, as the commands that take them:
    ``start the worker with `pressroom dev --source-root /x` (or `pressroom worker
    --source-root /x`)``. ``prefer``: a folder to name instead of a source path's own
    when it holds that path (``pressroom run`` passes the job file's folder — one root for
    a job's files)."""
    joined = _flags(outside, prefer=prefer)
    return f"start the worker with `pressroom dev {joined}` (or `pressroom worker {joined}`)"


def _flags(outside: Sequence[RefusedPath], *, prefer: Path | None) -> str:
    flags: list[str] = []
    for p in outside:
        folder = Path(p.folder)
        if p.kind == "source" and prefer is not None and (folder == prefer
                                                          or prefer in folder.parents):
            folder = prefer
        flag = f"{_FLAG[p.kind]} {_shell_word(str(folder))}"
        if flag not in flags:
            flags.append(flag)
    return " ".join(flags)


def _shell_word(text: str) -> str:
    """``text`` as one shell word (quoted only when it has to be)."""
    return shlex.quote(text)
