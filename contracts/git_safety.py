"""Running git on a repository a job names: only that folder's repository, never its code.

A local repository a job names is a folder inside the source roots (``contracts.path_safety.
locate_repository``), but the folder is only where git *starts*. Left to itself git walks up
to the first parent holding a repository (so ``<root>/tenantA/notes`` inside a repository at
``<root>`` reads all of ``<root>``, ``tenantB/`` included), follows a ``.git`` *file*
(``gitdir: <anywhere>``: worktrees, submodules) and a worktree's ``commondir``, reads
objects from every folder ``objects/info/alternates`` (recursively) and
``GIT_ALTERNATE_OBJECT_DIRECTORIES`` name, obeys ``GIT_DIR`` and its relatives from the
environment (a worker started from a git hook inherits them), and runs what a repository's
own config or refs tell it to. So every git process the worker and the CLI start is built
here (``git_invocation``; ``tests/sources/test_git_confinement.py`` pins that no other
call site spawns git):

- ``GIT_CEILING_DIRECTORIES`` is the parent of the folder git runs in: git looks for a
  repository in that folder and never in the folders above it;
- the variables that relocate a repository or its objects (``GIT_DIR``, ``GIT_WORK_TREE``,
  ``GIT_COMMON_DIR``, ``GIT_OBJECT_DIRECTORY``, ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` and the
  rest of ``RELOCATING_VARIABLES``) are removed from the environment;
- replace refs are ignored (``GIT_NO_REPLACE_OBJECTS``): a ``refs/replace/<sha>`` in a
  repository would otherwise make the pinned commit read as another one's tree and blobs
  (SECURITY.md §5), and lazy fetches of a partial clone are off (``GIT_NO_LAZY_FETCH``,
  honoured by git 2.45 and later);
- the repository's config may not run anything for the commands Pressroom uses:
  ``core.fsmonitor=false``, ``core.hooksPath=/dev/null`` (no hook runs), no pager,
  ``protocol.ext.allow=never``; no system config (``GIT_CONFIG_NOSYSTEM``), no prompt.
  ``safe.directory`` is left to git: a repository owned by another user is refused by git
  itself unless the operator's global config lists it.

Then, before anything is read, ``git rev-parse --absolute-git-dir --git-common-dir`` in the
folder must name folders inside it (a ``.git`` file or ``commondir`` pointing anywhere
else is refused), and every object folder its ``objects/info/alternates`` chain names must
resolve inside the source roots and outside Pressroom's own state (``check_git_dirs``). A
violation is ``RepositoryRefused`` (a ``PathRefused``: one line at the CLI, a
non-retryable failure on the worker); its message names the source and the folder, never
what a ``.git`` file or an alternates file holds. The submit check (``pressroom run``,
``resolve --add-source``) and the worker's spec check run ``confine_repository``; the
worker's reads run the same query through ``activities.sources.gitrepo.open_pinned``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from contracts.errors import RepositoryRefused

#: whether a resolved folder may be read as a job's source (the source roots, minus what
#: ``contracts.path_safety`` never reads: ``path_safety.readable_source``)
Readable = Callable[[Path], bool]

GIT = "git"
#: command-line config that wins over a repository's own (see the module docstring)
SAFE_OPTIONS: tuple[str, ...] = (
    "--no-pager",
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "protocol.ext.allow=never",
)
#: environment variables that would make git read another repository or other objects
RELOCATING_VARIABLES = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_INDEX_FILE", "GIT_NAMESPACE",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CEILING_DIRECTORIES", "GIT_REPLACE_REF_BASE",
    "GIT_GRAFT_FILE", "GIT_SHALLOW_FILE", "GIT_QUARANTINE_PATH", "GIT_PREFIX",
    "GIT_IMPLICIT_WORK_TREE", "GIT_INTERNAL_SUPER_PREFIX",
})
_FIXED_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # an unreachable private URL must fail, not wait for a password
    "GIT_ASKPASS": "true",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_NO_LAZY_FETCH": "1",
    "LC_ALL": "C",  # stable, parseable messages
}
#: the confinement query: where the repository's own and shared git folders are
GIT_DIRS_QUERY: tuple[str, ...] = (
    "rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir")
#: git follows alternates of alternates this deep (``link_alt_odb_entries``); so do we
MAX_ALTERNATE_DEPTH = 5
TIMEOUT_S = 30.0


def git_invocation(folder: str | Path, *args: str,
                   environ: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The argv and environment for ``git -C folder args`` (see the module docstring);
    ``environ`` is the environment to start from (default: this process's)."""
    base = os.environ if environ is None else environ
    env = {k: v for k, v in base.items() if k not in RELOCATING_VARIABLES}
    env.update(_FIXED_ENV)
    real = Path(os.path.realpath(folder))
    if real.parent != real:  # "/" has no folder above it to keep git out of
        env["GIT_CEILING_DIRECTORIES"] = str(real.parent)
    return [GIT, *SAFE_OPTIONS, "-C", str(folder), *args], env


def check_git_dirs(folder: Path, query_output: bytes, *, readable: Readable,
                   what: str) -> None:
    """Refuse a repository whose git folders (``GIT_DIRS_QUERY``'s output, run in the
    resolved ``folder``) lie outside ``folder`` or whose alternates are not ``readable``."""
    lines = query_output.decode("utf-8", "surrogateescape").splitlines()
    shown = folder
    if len(lines) != 2 or not all(Path(line).is_absolute() for line in lines):
        raise RepositoryRefused(f"{what} {shown}: git did not say where its repository is")
    for line, name in ((lines[0], "git directory"), (lines[1], "shared git directory")):
        real = Path(os.path.realpath(line))
        if real != folder and folder not in real.parents:
            raise RepositoryRefused(
                f"{what} {shown}: its {name} lies outside the repository folder (a .git file "
                "or commondir pointing elsewhere); only a repository inside its own folder "
                "is read")
    _check_alternates(Path(os.path.realpath(lines[1])) / "objects", readable, what=what,
                      shown=shown)


def _check_alternates(objects: Path, readable: Readable, *, what: str, shown: Path) -> None:
    """Every object folder ``objects/info/alternates`` names, recursively as git follows
    them, inside the source roots; never quoting the file's lines."""
    pending, seen = [(objects, 0)], {objects}
    while pending:
        folder, depth = pending.pop()
        try:
            text = (folder / "info" / "alternates").read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise RepositoryRefused(f"{what} {shown}: its objects/info/alternates cannot be "
                                    f"read ({exc.strerror or type(exc).__name__})") from None
        for raw in text.splitlines():
            entry = raw.strip()
            if not entry or entry.startswith("#"):
                continue
            if entry.startswith('"'):
                raise RepositoryRefused(f"{what} {shown}: its objects/info/alternates names a "
                                        "quoted object folder, which is never followed")
            target = Path(os.path.realpath(folder / entry))
            if not readable(target):
                raise RepositoryRefused(
                    f"{what} {shown}: its objects/info/alternates names an object folder "
                    "outside the source roots (or in Pressroom's own state); refused")
            if target not in seen and depth + 1 < MAX_ALTERNATE_DEPTH:
                seen.add(target)
                pending.append((target, depth + 1))


def confine_repository(folder: Path, *, readable: Readable, what: str) -> None:
    """The submit-time and spec-time check of a local repository's resolved ``folder``:
    a repository of its own (git never looks above it) whose git folders and alternates
    stay where ``check_git_dirs`` says. A missing folder passes (it is a recorded
    retrieval failure when read)."""
    if not folder.is_dir():
        return
    argv, env = git_invocation(folder, *GIT_DIRS_QUERY)
    try:
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise RepositoryRefused(f"{what} {folder} cannot be checked: git is not "
                                "installed here") from None
    except subprocess.TimeoutExpired:
        raise RepositoryRefused(f"{what} {folder} cannot be checked: git timed out "
                                f"after {TIMEOUT_S:g}s") from None
    if done.returncode != 0 and b"dubious ownership" in done.stderr:
        raise RepositoryRefused(
            f"{what} {folder} belongs to another user and git refuses it; an operator "
            "who trusts it may list it in git's safe.directory (global config)")
    if done.returncode != 0:
        raise RepositoryRefused(
            f"{what} {folder} is not a git repository of its own (git never looks in "
            "the folders above it, so a folder inside a larger repository is none); name "
            "the repository's own folder")
    check_git_dirs(folder, done.stdout, readable=readable, what=what)


__all__ = [
    "GIT_DIRS_QUERY",
    "RELOCATING_VARIABLES",
    "SAFE_OPTIONS",
    "Readable",
    "check_git_dirs",
    "confine_repository",
    "git_invocation",
]
