"""A git repository at one pinned commit — never its working tree — for the ``git`` source
kind (``activities.sources.git``).

Pinned means pinned: the spec's ``commit`` is a full object id (the spec refuses anything
else at parse time, and ``pinned_commit`` refuses it again here, before any git process,
for a value built around that validation); a spec that names only a ``ref`` is
``UnpinnedSource`` — ``pressroom run`` resolves refs once at submit (``cli.pins``),
the worker never does. No branch, tag or other name is resolved here, so what a job reads
cannot move under it.

Everything is read through the object database at that commit: ``git rev-parse
<sha>^{commit}`` confirms the object is a commit with exactly that id, ``git ls-tree`` at
it gives the file list and blob ids, and ``git cat-file`` the blob contents. Uncommitted
edits, untracked files and a different checked-out branch therefore cannot leak into
evidence. Each git call runs via ``asyncio.create_subprocess_exec`` with a timeout,
confined to the repository's own folder and with a safe config (``contracts.git_safety``:
git never walks up to a parent repository; a ``.git`` file, ``commondir`` or alternates
reaching out of the folder or the roots is ``RepositoryRefused`` before anything is read);
a failure is a ``RetrievalFailed`` naming what failed.

A repository given as a URL is cloned bare once into ``$PRESSROOM_HOME/git-cache``, one
clone per URL shared by every job and tenant on the worker; an unreachable URL is
``RetrievalFailed`` (the tool call's ``source_unavailable``). A job never writes a ref
there: a commit the clone lacks is fetched by its id into no ref (``git fetch --no-tags
--no-write-fetch-head origin <sha>``), never through a caller's refspec. A server that will
not serve an unadvertised object by id (``uploadpack.allowReachableSHA1InWant`` off) gets
one more fetch of its branches and tags into Pressroom's own ``refs/pressroom/`` namespace
(fixed refspecs no spec can name); the commit must then be there. Unreferenced fetched
objects may be pruned by a later ``gc``; the next read notices and fetches again.

What a commit holds never changes: once ``rev-parse`` has confirmed the pinned commit is in
the repository, the tree listing read at that commit is kept per worker process (bounded
LRU, keyed by repository and commit sha), so the next job over the same pins does not spawn
that git process again. The two checks that can change — the directory is a repository, the
commit is in it — run on every open.

The research tools read blobs through ``PinnedTree.read_within``: one streamed ``cat-file
--batch`` per call, within that call's byte budget (``activities.call_budget``), so a
repository of highly compressible blobs cannot expand into the worker's memory; the files
past the budget are skipped and named.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from activities.sources.errors import RetrievalFailed
from contracts.errors import UnpinnedSource
from contracts.git_safety import GIT_DIRS_QUERY, check_git_dirs, git_invocation
from contracts.path_safety import (
    PathRoots,
    locate_repository,
    readable_source,
)
from contracts.source_specs import (
    REMOTE_LOCATION,
    GitSourceSpec,
    expand_location,
    is_object_id,
)
from settings import home_from_env

DEFAULT_TIMEOUT_S = 30.0
MAX_BLOB_BYTES = 5_000_000
#: the fallback fetch's refspecs: the remote's branches and tags, mirrored only into
#: Pressroom's own namespace (never refs/heads or refs/tags, never a name a spec gives)
_MIRROR_REFSPECS = ("+refs/heads/*:refs/pressroom/heads/*", "+refs/tags/*:refs/pressroom/tags/*")
_FETCH = ("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", "origin")


_PINNED_CACHE_BYTES = 64 * 1024 * 1024
_pinned: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
_pinned_bytes = 0


async def _at_commit(key: tuple[Any, ...], size_of: Callable[[Any], int],
                     compute: Callable[[], Awaitable[Any]]) -> Any:
    """``compute()`` once per key (a read at a resolved commit sha; see the docstring)."""
    hit = _pinned.get(key)
    if hit is not None:
        _pinned.move_to_end(key)
        return hit[0]
    value = await compute()
    _keep(key, value, size_of(value))
    return value


def _keep(key: tuple[Any, ...], value: Any, size: int) -> None:
    """Remember ``value`` (``size`` bytes) under ``key``, oldest entries out first."""
    global _pinned_bytes
    if size <= _PINNED_CACHE_BYTES // 4 and key not in _pinned:
        _pinned[key] = (value, size)
        _pinned_bytes += size
        while _pinned_bytes > _PINNED_CACHE_BYTES:
            _k, (_v, old) = _pinned.popitem(last=False)
            _pinned_bytes -= old


async def run_git(
    repo: str,
    *args: str,
    timeout: float,
    ok_codes: Sequence[int] = (0,),
    stdin: bytes | None = None,
) -> tuple[int, bytes]:
    """Run ``git -C repo args`` confined to ``repo`` (``contracts.git_safety``); return
    (code, stdout) or raise ``RetrievalFailed``."""
    argv, env = git_invocation(repo, *args)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
    except FileNotFoundError as exc:
        raise RetrievalFailed("git executable not found on this worker") from exc
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError as exc:
        with contextlib.suppress(ProcessLookupError):  # it may have exited meanwhile
            proc.kill()
        await proc.wait()
        raise RetrievalFailed(f"git {args[0]} timed out after {timeout:g}s") from exc
    code = proc.returncode if proc.returncode is not None else -1
    if code not in ok_codes:
        msg = err.decode("utf-8", "replace").strip().splitlines()
        raise RetrievalFailed(f"git {args[0]} failed ({code}): {msg[-1] if msg else 'no output'}")
    return code, out


def pinned_commit(spec: GitSourceSpec) -> str:
    """``spec``'s full commit id, or ``UnpinnedSource`` (before any git process runs)."""
    commit = spec.commit
    if commit is None:
        named = f"names ref {spec.ref!r} but " if spec.ref else ""
        raise UnpinnedSource(
            f"git source {spec.name!r} {named}has no commit: a job reads only a pinned "
            "commit id; submit it with `pressroom run`, which resolves the ref once")
    if not is_object_id(commit):
        raise UnpinnedSource(
            f"git source {spec.name!r}: commit {commit[:100]!r} is not a full commit id; "
            "nothing was fetched or read")
    return commit


async def _local_repo(location: str, commit: str, timeout: float, cache_root: Path, *,
                      confine: Callable[[bytes], None]) -> str:
    """A local directory to run git in: the repo itself (once ``confine`` accepted where git
    says its folders are), or a bare clone of a URL (cached under ``cache_root``) that holds
    ``commit`` (a full object id)."""
    if not REMOTE_LOCATION.match(location):
        if not Path(location).is_dir():
            raise RetrievalFailed(f"repository {location} does not exist or is not a directory")
        code, out = await run_git(location, *GIT_DIRS_QUERY, timeout=timeout,
                                  ok_codes=(0, 128))
        if code != 0:
            raise RetrievalFailed(f"{location} is not a git repository")
        confine(out)
        return location
    cache = cache_root / hashlib.sha256(location.encode()).hexdigest()[:24]
    if not (cache / "HEAD").exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        # Clone beside the cache and rename into place, so a concurrent or crashed clone
        # never leaves a half-written repository where the next acquisition looks.
        staging = Path(tempfile.mkdtemp(prefix=".clone-", dir=cache.parent))
        try:
            await run_git(
                str(staging), "clone", "--bare", "--quiet", "--", location,
                str(staging / "repo.git"), timeout=timeout,
            )
            with contextlib.suppress(OSError):  # another acquisition won the race: fine
                os.rename(staging / "repo.git", cache)
        except RetrievalFailed as exc:
            raise RetrievalFailed(f"repository {location} is unreachable: {exc}") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    if not await _has_commit(str(cache), commit, timeout):
        await _fetch_commit(str(cache), location, commit, timeout)
    return str(cache)


async def _has_commit(repo: str, sha: str, timeout: float) -> bool:
    code, _ = await run_git(repo, "cat-file", "-e", f"{sha}^{{commit}}", timeout=timeout,
                            ok_codes=(0, 1, 128))
    return code == 0


async def _fetch_commit(cache: str, location: str, sha: str, timeout: float) -> None:
    """Bring ``sha`` into the shared clone by its id; no ref a spec can name is written
    (see the module docstring)."""
    try:
        await run_git(cache, *_FETCH, sha, timeout=timeout)
        return
    except RetrievalFailed as by_id:
        refused = by_id
    try:
        await run_git(cache, *_FETCH, *_MIRROR_REFSPECS, timeout=timeout)
    except RetrievalFailed as exc:
        raise RetrievalFailed(f"repository {location} is unreachable: {exc}") from exc
    if not await _has_commit(cache, sha, timeout):
        raise RetrievalFailed(f"commit {sha} not found in repository {location} "
                              f"({refused}; not on any of its branches or tags either)")


async def _resolve(repo: str, commit: str, timeout: float) -> str:
    """``commit`` itself, once the repository confirms it is a commit with exactly that id."""
    code, out = await run_git(
        repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^{{commit}}",
        timeout=timeout, ok_codes=(0, 1, 128),
    )
    sha = out.decode().strip()
    if code != 0 or not is_object_id(sha):
        raise RetrievalFailed(f"commit {commit} not found in repository")
    if sha != commit:
        raise RetrievalFailed(f"object {commit} is not a commit (it peels to commit {sha}); "
                              "pin the commit's own id")
    return sha


async def _tree(repo: str, sha: str, timeout: float) -> dict[str, tuple[str, int]]:
    """path -> (blob id, size) of every file at ``sha``."""
    _, out = await run_git(
        repo, "ls-tree", "-r", "-z", "-l", "--full-tree", sha, timeout=timeout
    )
    blobs: dict[str, tuple[str, int]] = {}
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 4 and parts[1] == b"blob":
            size = int(parts[3]) if parts[3].isdigit() else 0
            blobs[path.decode("utf-8", "surrogateescape")] = (parts[2].decode(), size)
    return blobs


def in_scope(path: str, pathspecs: Sequence[str]) -> bool:
    """Whether ``path`` lies inside one of a git source's declared ``paths`` (all: none)."""
    if not pathspecs:
        return True
    return any(path == p.rstrip("/") or path.startswith(p.rstrip("/") + "/") for p in pathspecs)


async def _stream_blobs(repo: str, blobs: Sequence[tuple[str, int]], timeout: float,
                        arrived: Callable[[str, bytes], None]) -> None:
    """Stream ``blobs`` (id, expected size) through one ``git cat-file --batch`` process,
    handing each to ``arrived`` as it comes: each header's size is read before its
    content, and a blob whose header does not give exactly the expected size stops the
    read (``RetrievalFailed``) before any of its content is taken — the stream never
    reads more than the sizes it was given."""
    if not blobs:
        return
    request = ("".join(f"{blob}\n" for blob, _ in blobs)).encode()
    argv, env = git_invocation(repo, "cat-file", "--batch")
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env)
    except FileNotFoundError as exc:
        raise RetrievalFailed("git executable not found on this worker") from exc
    assert proc.stdin is not None and proc.stdout is not None

    async def send() -> None:  # beside the reads: a long request would fill the pipe
        assert proc.stdin is not None
        with contextlib.suppress(ConnectionError):  # git stopped reading: the reads say why
            proc.stdin.write(request)
            await proc.stdin.drain()
            proc.stdin.close()

    sender = asyncio.create_task(send())
    try:
        async with asyncio.timeout(timeout):
            for blob, size in blobs:
                header = (await proc.stdout.readline()).split()
                if (len(header) != 3 or header[0].decode("ascii", "replace") != blob
                        or header[1] != b"blob" or header[2] != str(size).encode()):
                    raise RetrievalFailed(f"git cat-file could not read blob {blob}")
                data = await proc.stdout.readexactly(size)
                await proc.stdout.readexactly(1)  # content is followed by a newline
                arrived(blob, data)
    except TimeoutError as exc:
        raise RetrievalFailed(f"git cat-file timed out after {timeout:g}s") from exc
    except asyncio.IncompleteReadError as exc:
        raise RetrievalFailed("git cat-file ended before every blob was read") from exc
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # done, or stopped half-way
                proc.kill()
        await proc.wait()


@dataclass
class BlobsRead:
    """What ``PinnedTree.read_within`` read: contents by path, the paths it skipped with
    the reason, and the bytes the contents add up to."""

    contents: dict[str, bytes] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    bytes_read: int = 0


class PinnedTree:
    """One repository at one resolved commit: its files and their contents, read through
    the object database (never a working tree) and kept per worker like every read at a
    pinned commit. The research tools read sources through this."""

    def __init__(self, repo: str, sha: str, files: dict[str, tuple[str, int]],
                 timeout: float) -> None:
        self.repo = repo
        self.sha = sha
        #: path -> (blob id, size) of every file at ``sha``
        self.files = files
        self._timeout = timeout

    async def read_within(self, paths: Sequence[str], max_bytes: int) -> BlobsRead:
        """The contents of ``paths`` (each a key of ``files``) at the pinned commit, in
        order, until the next one would take the total past ``max_bytes``.

        A file over ``MAX_BLOB_BYTES`` and every file past the budget is skipped with its
        reason. Sizes come from the tree listing and are checked against each blob's
        ``cat-file`` header as it streams in, so no more than ``max_bytes`` is ever read
        or held, however well the repository's blobs compress; a blob another call read
        is taken from the worker's cache (and still counts against the budget).
        """
        found = BlobsRead()
        planned: dict[str, list[str]] = {}  # blob id -> the paths holding it
        stream: list[tuple[str, int]] = []
        for path in paths:
            blob, size = self.files[path]
            if blob in planned:  # the same content twice is read (and counted) once
                planned[blob].append(path)
                continue
            if size > MAX_BLOB_BYTES:
                found.skipped.append((path, f"{size} bytes; files over {MAX_BLOB_BYTES} "
                                            "are not read"))
                continue
            if found.bytes_read + size > max_bytes:
                found.skipped.append((path, f"the call's read budget of {max_bytes} bytes "
                                            "is spent"))
                continue
            found.bytes_read += size
            planned[blob] = [path]
            cached = _pinned.get(("blob", self.repo, blob))
            if cached is None:
                stream.append((blob, size))
            else:
                _pinned.move_to_end(("blob", self.repo, blob))
                found.contents[path] = cached[0]

        def arrived(blob: str, data: bytes) -> None:
            _keep(("blob", self.repo, blob), data, len(data) + 1)
            for path in planned[blob]:
                found.contents[path] = data

        await _stream_blobs(self.repo, stream, self._timeout, arrived)
        for holders in planned.values():  # a later path holding an earlier path's blob
            for path in holders:
                found.contents.setdefault(path, found.contents[holders[0]])
        return found


async def open_pinned(spec: GitSourceSpec, locations: Mapping[str, str],
                      timeout: float = DEFAULT_TIMEOUT_S, *,
                      roots: PathRoots | None = None) -> PinnedTree:
    """``spec``'s repository at its pinned commit; ``RetrievalFailed`` names what failed,
    ``UnpinnedSource`` a spec without a full commit id, ``PathRefused`` a local repository
    outside ``roots`` (the worker's source roots; none given: Pressroom's own folders) and
    ``RepositoryRefused`` one whose git folders or alternates reach outside them."""
    commit = pinned_commit(spec)
    cache_root = home_from_env(locations) / "git-cache"
    location = expand_location(spec.repo, locations)
    roots = roots or PathRoots.default(locations)
    what = f"source {spec.name!r} repository"
    located = locate_repository(location, roots, what=what)

    def confine(query_output: bytes) -> None:
        """The folder's git folders and alternates, before anything is read from it
        (``contracts.git_safety``)."""
        if located is not None:
            check_git_dirs(located.real, query_output, readable=readable_source(roots),
                           what=what)

    if located is not None and REMOTE_LOCATION.match(location) and located.real.is_dir():
        # a ``file://`` URL: cloning it reads its git folders and alternates too
        code, out = await run_git(str(located.real), *GIT_DIRS_QUERY, timeout=timeout,
                                  ok_codes=(0, 128))
        if code == 0:
            confine(out)
    repo = await _local_repo(location, commit, timeout, cache_root, confine=confine)
    sha = await _resolve(repo, commit, timeout)
    files: dict[str, tuple[str, int]] = await _at_commit(
        ("tree", repo, sha), lambda b: 100 * len(b) + 1, lambda: _tree(repo, sha, timeout))
    return PinnedTree(repo, sha, files, timeout)


