"""Operator-set roots for every path a job names, and reading and writing inside them.

A job spec (or a ``resolve --add-source``) names paths — document files and folders, saved
web pages, local git repositories, the workspace, a policy file, the publish destination —
and none of them is trusted: each is used only inside the roots the operator set for its
kind (``PathRoots``: the *source roots* for everything read, the *publish roots* for the
destination; ``settings.Settings.source_root_paths`` / ``publish_root_paths`` say which).
The same checks run twice: at submit (``pressroom run``, ``check_job_paths`` with the
client's roots) and on the worker, in the activity that reads or writes the path (with the
worker's roots) — a spec started some other way, or a file swapped after submit, is caught
where it matters.

What "inside" means, for every path:

1. it is absolute (a relative path would mean whatever the reading process's working
   directory is);
2. resolved — every symbolic link followed (``os.path.realpath``) — it lies inside a root,
   and not inside Pressroom's own state (``PathRoots.private``: the git cache, reviewer
   keys, the review console's accounts, the SQLite store; and any file directly in
   ``$PRESSROOM_HOME`` — databases, logs);
3. it is not on ``/proc``, ``/sys`` or ``/dev`` — by path, and by device number, so a bind
   mount of them elsewhere is refused too (their "files" are regular files of size 0 that
   read the worker's environment, memory or devices);
4. when a file is read (``read_file``), every folder from the root down is opened with
   ``O_NOFOLLOW`` relative to its parent (``os.open(..., dir_fd=...)``) and the file itself
   with ``O_NOFOLLOW | O_NONBLOCK``: a symbolic link swapped in after step 2 fails the open
   instead of being followed, and a FIFO cannot block it. Before a byte is read, ``lstat``
   and then ``fstat`` of the open file must show a regular file (never a FIFO, socket or
   device) within the size limit; the read itself stops at the limit.

Writing (``open_folder(..., create=True)``) walks and creates the folders the same way, so
a published article is never written through a symbolic link.

Inside a folder (``list_folder``), a symbolic link is followed only to a file inside the
source roots; a link out of them, a link to a folder, a special file and a file over the
size limit, and a name that is not valid UTF-8 (the kernel allows any bytes; Python hands
them over surrogate-escaped, which no hash, JSON or database can take) are *excluded with a
reason* the caller records (a tool result's warnings, a
listing's ``excluded``, the manifest's acquisition outcomes) — never dropped silently.
Hidden entries (a name starting with ``.``) are skipped, as they always were.

A violation is ``PathOutsideRoots`` (outside every root) or ``PathRefused`` (the rest), both
in ``contracts.errors``: one line at the CLI, a non-retryable failure in an activity. The
message names the path and the roots, never what the file holds.

Tenant roots. An operator may bind tenants to roots of their own
(``Settings.tenant_source_roots`` / ``tenant_publish_roots``, carried in
``PathRoots.tenants``). Once any tenant is bound, a job's paths are checked against
``PathRoots.for_tenant(spec.scope.tenant)``: its tenant's roots *replace* the shared ones
(Pressroom's own state stays refused inside them), so a job cannot name a folder of another
tenant even when both lie under one shared root, and a link inside its folder that leads
into another tenant's is excluded like any link out of the roots. A path outside them is
``PathOutsideTenantRoots``, naming the path, the job's tenant and — when another tenant's
root holds it — that tenant; a tenant bound to no roots of a kind has none of that kind.
With no binding, ``for_tenant`` is the shared roots, as before tenants could be bound.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

from context.errors import PolicyError
from context.policy import (
    POLICY_DIR,
    ContextPolicy,
    is_policy_name,
    load_policy,
    policy_from_text,
)
from contracts.errors import PathOutsideRoots, PathOutsideTenantRoots, PathRefused
from contracts.git_safety import Readable, confine_repository
from contracts.job_spec import JobSpec
from contracts.source_specs import (
    SourceSpec,
    expand_location,
)
from settings import Settings, fixtures_from_env, home_from_env

#: Filesystems whose "files" are the kernel's, never a source: refused by path and device.
SPECIAL_FILESYSTEMS = (Path("/proc"), Path("/sys"), Path("/dev"))
#: A file read whole with no limit of its own is at most this.
DEFAULT_MAX_FILE_BYTES = 2_000_000
#: A policy file larger than this is refused before it is read (the shipped ones are ~4 kB).
POLICY_MAX_BYTES = 1_000_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
# the git source forms that are not a local path (``file://`` is checked as the path it is)
_REMOTE = re.compile(r"^([a-z][a-z0-9+.-]*://|[^/@\s]+@[^/:\s]+:)", re.IGNORECASE)

Kind = Literal["source", "publish"]
#: one tenant's binding: (tenant, its source roots, its publish roots)
TenantBinding = tuple[str, tuple[Path, ...], tuple[Path, ...]]


def undecodable_name(name: str) -> str | None:
    """``None`` when ``name`` is valid UTF-8; otherwise the name with each undecodable byte
    written as ``\\xNN`` — printable, so an exclusion can name the file. A name read from
    the file system or ``git`` arrives surrogate-escaped (PEP 383) and would raise
    ``UnicodeEncodeError`` wherever it is hashed or stored."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return None


def _resolved(paths: Iterable[Path]) -> tuple[Path, ...]:
    """Each path resolved once (a root given through a symbolic link is its target),
    duplicates dropped, order kept."""
    seen: dict[Path, None] = {}
    for path in paths:
        seen.setdefault(Path(os.path.realpath(path)), None)
    return tuple(seen)


@dataclass(frozen=True)
class PathRoots:
    """The folders a job's paths must resolve inside, per kind, and Pressroom's own state.

    ``state_dirs``: folders whose direct *files* are Pressroom's own (``$PRESSROOM_HOME``
    holds the databases and logs beside the folders a job may use).
    """

    sources: tuple[Path, ...]
    publish: tuple[Path, ...]
    private: tuple[Path, ...] = ()
    state_dirs: tuple[Path, ...] = field(default=())
    #: every tenant the operator bound to roots of its own (module docstring); empty: none
    tenants: tuple[TenantBinding, ...] = ()
    #: the tenant these roots were narrowed to (``for_tenant``); ``None``: the shared roots
    tenant: str | None = None

    def __post_init__(self) -> None:
        for name in ("sources", "publish", "private", "state_dirs"):
            object.__setattr__(self, name, _resolved(getattr(self, name)))
        object.__setattr__(self, "tenants", tuple(
            (name, _resolved(src), _resolved(pub)) for name, src, pub in self.tenants))

    @classmethod
    def of(cls, settings: Settings, *, sources: Iterable[Path] = (),
           publish: Iterable[Path] = ()) -> PathRoots:
        """The roots ``settings`` name, plus what a command adds (the job file's folder for
        ``pressroom run``; the bundled examples for ``dev`` / ``demo``), and the tenants'
        bindings."""
        names = sorted({*settings.tenant_source_roots, *settings.tenant_publish_roots})
        tenants = tuple((name, settings.tenant_source_roots.get(name, ()),
                         settings.tenant_publish_roots.get(name, ())) for name in names)
        return cls(sources=settings.source_root_paths(*sources),
                   publish=settings.publish_root_paths(*publish),
                   private=settings.private_paths, state_dirs=(settings.home,),
                   tenants=tenants)

    def for_tenant(self, tenant: str) -> PathRoots:
        """The roots a job of ``tenant`` may use: with no tenant bound, these; otherwise
        only ``tenant``'s own (none when it is bound to none), so that every check below
        refuses the rest with ``PathOutsideTenantRoots`` naming the tenant."""
        if not self.tenants:
            return self
        own = next(((src, pub) for name, src, pub in self.tenants if name == tenant),
                   ((), ()))
        return PathRoots(sources=own[0], publish=own[1], private=self.private,
                         state_dirs=self.state_dirs, tenants=self.tenants, tenant=tenant)

    def owner_of(self, real: Path, kind: Kind) -> str | None:
        """The bound tenant other than ``self.tenant`` one of whose roots of ``kind`` holds
        resolved ``real`` (for the refusal's message), else ``None``."""
        for name, src, pub in self.tenants:
            if name != self.tenant and any(real == r or r in real.parents
                                           for r in (src if kind == "source" else pub)):
                return name
        return None

    @classmethod
    def default(cls, locations: Mapping[str, str]) -> PathRoots:
        """The narrowest roots, for a caller that names none: Pressroom's home and fixtures
        folder as ``locations`` (``Settings.locations``) say, and nothing else."""
        home, fixtures = home_from_env(locations), fixtures_from_env(locations)
        return cls.of(Settings(home=home, fixtures=fixtures))

    def of_kind(self, kind: Kind) -> tuple[Path, ...]:
        return self.sources if kind == "source" else self.publish

    def is_private(self, real: Path) -> bool:
        """Whether resolved ``real`` is Pressroom's own state: under a private path, or an
        existing entry directly in a state folder that is not a folder (a folder there,
        existing or still to be made, such as ``published/``, is a job's to use)."""
        if any(real == p or p in real.parents for p in self.private):
            return True
        return (real.parent in self.state_dirs and os.path.lexists(real)
                and not os.path.isdir(real))

    def describe(self, kind: Kind) -> str:
        roots = self.of_kind(kind)
        return ", ".join(str(r) for r in roots) if roots else "none"


class Located(NamedTuple):
    """A checked path: the root it lies in and its resolved location under that root."""

    root: Path
    real: Path

    @property
    def parts(self) -> tuple[str, ...]:
        """The components from ``root`` down to ``real``."""
        return self.real.relative_to(self.root).parts


@functools.lru_cache(maxsize=1)
def _special_devices() -> frozenset[int]:
    """Device numbers of ``/proc``, ``/sys`` and ``/dev`` where they are their own
    filesystems (never the root filesystem's: a chroot without them refuses nothing)."""
    try:
        root_dev = os.stat("/").st_dev
    except OSError:
        return frozenset()
    devices = set()
    for special in SPECIAL_FILESYSTEMS:
        try:
            dev = os.stat(special).st_dev
        except OSError:
            continue
        if dev != root_dev:
            devices.add(dev)
    return frozenset(devices)


def _on_special_filesystem(real: Path) -> bool:
    return any(real == s or s in real.parents for s in SPECIAL_FILESYSTEMS)


def locate(path: str | Path, roots: PathRoots, kind: Kind, *, what: str) -> Located:
    """``path`` checked against ``roots`` of ``kind`` (steps 1 to 3 of the module docstring);
    it need not exist (a destination is created under its root)."""
    text = str(path)
    if "\0" in text:
        raise PathRefused(f"{what} {text!r} is not a plain path")
    if not Path(text).is_absolute():
        raise PathRefused(f"{what} {text!r} is relative; a job's paths are absolute (a job "
                          "file's relative paths are resolved against its folder)")
    real = Path(os.path.realpath(text))
    if _on_special_filesystem(real):
        raise PathRefused(f"{what} {text} is on /{real.parts[1]}, which is never read or "
                          "written for a job")
    for root in roots.of_kind(kind):
        if real == root or root in real.parents:
            if roots.is_private(real):
                raise PathRefused(f"{what} {text} is Pressroom's own state, never used "
                                  "for a job")
            return Located(root, real)
    shown = f" (resolved: {real})" if str(real) != os.path.normpath(text) else ""
    if roots.tenant is not None:
        owner = roots.owner_of(real, kind)
        where = f" it lies in tenant {owner!r}'s {kind} roots," if owner is not None else ""
        raise PathOutsideTenantRoots(
            f"{what} {text}{shown} is outside tenant {roots.tenant!r}'s {kind} roots "
            f"({roots.describe(kind)});{where} a job reads and publishes only inside its "
            "own tenant's roots (PRESSROOM_TENANT_SOURCE_ROOTS / "
            "PRESSROOM_TENANT_PUBLISH_ROOTS)")
    flag = "--source-root" if kind == "source" else "--publish-root"
    raise PathOutsideRoots(f"{what} {text}{shown} is outside the {kind} roots "
                           f"({roots.describe(kind)}); an operator may add a root with "
                           f"{flag} or PRESSROOM_{kind.upper()}_ROOTS")


def _type_name(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISLNK, "symbolic link")):
        if test(mode):
            return name
    return "special file"


def _check_file_stat(st: os.stat_result, what: str, path: Path, max_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"{what} {path} is a {_type_name(st.st_mode)}, not a regular file; "
                          "not read")
    if st.st_dev in _special_devices():
        raise PathRefused(f"{what} {path} is on a kernel filesystem (/proc, /sys or /dev); "
                          "not read")
    if st.st_size > max_bytes:
        raise PathRefused(f"{what} {path} is {st.st_size} bytes, over the limit of "
                          f"{max_bytes}; not read")


def _walk(root_fd: int, parts: Sequence[str], what: str, shown: Path, *,
          create: bool = False, mode: int = 0o755) -> int:
    """The folder ``parts`` below ``root_fd``, each component opened with ``O_NOFOLLOW``
    (created first with ``create``); a file descriptor the caller closes."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise PathRefused(f"{what} {shown}: {part!r} is not a folder (a symbolic "
                                      "link or a file put there after the check); not "
                                      "followed") from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_folder(located: Located, *, what: str, create: bool = False) -> int:
    """A descriptor of the folder ``located`` (created with ``create``), reached from its
    root without following a symbolic link; the caller closes it."""
    root_fd = os.open(located.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return _walk(root_fd, located.parts, what, located.real, create=create)
    finally:
        os.close(root_fd)


def read_file(located: Located, *, what: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``located`` (step 4 of the module docstring).

    ``FileNotFoundError`` when it does not exist (callers say so in their own words);
    ``PathRefused`` when it is not a regular file, is over ``max_bytes``, or a component
    turned into a symbolic link since it was located.
    """
    _check_file_stat(os.lstat(located.real), what, located.real, max_bytes)
    if located.parts:
        folder = open_folder(Located(located.root, located.real.parent), what=what)
    else:  # a root that is itself a file (already resolved)
        folder = os.open(located.real.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    name = located.real.name
    try:
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathRefused(f"{what} {located.real} turned into a symbolic link after "
                                  "it was checked; not followed") from None
            raise
    finally:
        os.close(folder)
    try:
        _check_file_stat(os.fstat(fd), what, located.real, max_bytes)
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise PathRefused(f"{what} {located.real} grew over the limit of {max_bytes} "
                              "bytes while it was read; not read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def existing_type(real: Path) -> Literal["file", "folder", "missing"] | str:
    """``file``, ``folder``, ``missing`` or the name of what else ``real`` is."""
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "folder"
    return _type_name(st.st_mode)


@dataclass
class FolderListing:
    """What ``list_folder`` found: the files a reader may open (relative POSIX path →
    located file) and the entries it excluded, each with its reason."""

    files: dict[str, Located] = field(default_factory=dict)
    excluded: list[tuple[str, str]] = field(default_factory=list)
    #: ``max_files`` was passed and more files than that matched: the listing stopped there
    #: (``files`` holds ``max_files + 1``), so a folder of 100,000 files is refused in
    #: milliseconds instead of after a stat of every one
    over_limit: bool = False


#: how deep a document or page folder is listed: a folder nested deeper is a recorded
#: exclusion (the listing recurses; Python's own limit would otherwise end it in a crash)
MAX_FOLDER_DEPTH = 64


def list_folder(folder: Located, roots: PathRoots, *, suffixes: Iterable[str],
                max_bytes: int, max_files: int | None = None) -> FolderListing:
    """The files under ``folder`` whose names end in one of ``suffixes``, sorted, and the
    exclusions (see the module docstring). Reading each one is ``read_file``'s job: it
    checks again."""
    wanted = tuple(s.lower() for s in suffixes)
    listing = FolderListing()

    def visit(path: Path, rel: str, depth: int = 0) -> None:
        if depth > MAX_FOLDER_DEPTH:
            # a deeper folder is an exclusion, never a RecursionError out of the listing
            listing.excluded.append((rel, f"folder nested deeper than {MAX_FOLDER_DEPTH} "
                                          "levels; not listed"))
            return
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError as exc:
            listing.excluded.append((rel or ".", f"folder cannot be listed ({exc.strerror})"))
            return
        for entry in entries:
            if listing.over_limit:
                return
            if entry.name.startswith("."):
                continue
            name = f"{rel}/{entry.name}" if rel else entry.name
            shown = undecodable_name(name)
            if shown is not None:
                listing.excluded.append((shown, "name is not valid UTF-8; not read"))
                continue
            matches = entry.name.lower().endswith(wanted)
            here = Path(entry.path)
            if _on_special_filesystem(here) or roots.is_private(here):
                listing.excluded.append((name, "Pressroom's own state or a kernel "
                                               "filesystem; not read"))
            elif entry.is_symlink():
                _linked(entry, name, matches)
            elif entry.is_dir(follow_symlinks=False):
                visit(here, name, depth + 1)
            elif entry.is_file(follow_symlinks=False):
                if not matches:
                    continue
                size = entry.stat(follow_symlinks=False).st_size
                if size > max_bytes:
                    listing.excluded.append(
                        (name, f"{size} bytes, over the limit of {max_bytes}; not read"))
                else:
                    listing.files[name] = Located(folder.root, here)
                    if max_files is not None and len(listing.files) > max_files:
                        listing.over_limit = True
            else:
                kind = _type_name(entry.stat(follow_symlinks=False).st_mode)
                listing.excluded.append((name, f"a {kind}, not a regular file; not read"))

    def _linked(entry: os.DirEntry[str], name: str, matches: bool) -> None:
        try:
            target = locate(entry.path, roots, "source", what="link")
        except PathOutsideRoots:
            listing.excluded.append(
                (name, "symbolic link to a path outside the source roots; not followed"))
            return
        except PathRefused:
            listing.excluded.append((name, "symbolic link to Pressroom's own state or a "
                                           "kernel filesystem; not followed"))
            return
        kind = existing_type(target.real)
        if kind == "folder":
            listing.excluded.append((name, "symbolic link to a folder; not followed"))
        elif kind == "file":
            if matches:
                size = os.stat(target.real).st_size
                if size > max_bytes:
                    listing.excluded.append(
                        (name, f"{size} bytes, over the limit of {max_bytes}; not read"))
                else:
                    listing.files[name] = target
        elif kind == "missing":
            if matches:
                listing.excluded.append((name, "symbolic link to nothing; not read"))
        else:
            listing.excluded.append((name, f"symbolic link to a {kind}; not read"))

    visit(folder.real, "")
    return listing


def is_remote(location: str) -> bool:
    """Whether a git source's ``repo`` is a URL (``file://`` counts as the local path it
    names: see ``locate_repository``)."""
    return bool(_REMOTE.match(location)) and not location.lower().startswith("file://")


def locate_repository(location: str, roots: PathRoots, *, what: str) -> Located | None:
    """A local git repository's entry check (``None`` for a remote URL): inside the source
    roots and, if it exists, a folder. ``file://`` URLs are checked as their path."""
    if is_remote(location):
        return None
    path = location[len("file://"):] if location.lower().startswith("file://") else location
    located = locate(path, roots, "source", what=what)
    kind = existing_type(located.real)
    if kind not in ("folder", "missing"):
        raise PathRefused(f"{what} {location} is a {kind}, not a repository folder")
    return located


def readable_source(roots: PathRoots) -> Readable:
    """Whether a resolved path may be read as a source under ``roots`` (``locate``'s
    checks): for what a repository's alternates name (``contracts.git_safety``)."""
    def readable(real: Path) -> bool:
        try:
            locate(real, roots, "source", what="object folder")
        except PathRefused:
            return False
        return True
    return readable


def _check_existing(located: Located, allowed: Sequence[str], what: str, shown: str) -> None:
    kind = existing_type(located.real)
    if kind not in (*allowed, "missing"):
        raise PathRefused(f"{what} {shown} is a {kind}, not a {' or '.join(allowed)}")


def source_path(source: SourceSpec, locations: Mapping[str, str]
                ) -> tuple[str, str, Kind, Sequence[str]]:
    """The path a source names (expanded): (what, path, kind, the types it may be)."""
    named = source.local_path()  # each kind says which path it names, if any
    assert named is not None, "a source that names no path is skipped (see job_paths)"
    label, location, types = named
    return f"source {source.name!r} {label}", expand_location(location, locations), "source", \
        types


def names_a_path(source: SourceSpec) -> bool:
    """Whether ``source`` names a local path: every kind but a live web page (``url:``
    only), whose URL the operator's web rules check instead (``contracts.web_policy``)."""
    return source.local_path() is not None


def check_source(source: SourceSpec, roots: PathRoots, locations: Mapping[str, str]) -> None:
    """``check_job_paths`` for one source (``resolve --add-source``)."""
    if names_a_path(source):
        _check(*source_path(source, locations), roots)


def check_job_path(what: str, path: str, kind: Kind, types: Sequence[str],
                   roots: PathRoots) -> None:
    """``check_job_paths`` for one of the paths ``job_paths`` yields (``pressroom check``
    reports each path's problem on its own line)."""
    _check(what, path, kind, types, roots)


def _check(what: str, path: str, kind: Kind, types: Sequence[str], roots: PathRoots) -> None:
    if what.endswith(" repository"):
        located = locate_repository(path, roots, what=what)
        if located is not None:
            confine_repository(located.real, readable=readable_source(roots), what=what)
    else:
        _check_existing(locate(path, roots, kind, what=what), types, what, path)


def job_paths(spec: JobSpec, locations: Mapping[str, str]
              ) -> Iterator[tuple[str, str, Kind, Sequence[str]]]:
    """Every path ``spec`` names: (what, path, kind, the types it may be where it exists).
    Source locations are expanded with ``locations`` (``Settings.locations``)."""
    for source in spec.sources:
        if names_a_path(source):
            yield source_path(source, locations)
    if spec.workspace:
        yield "workspace", spec.workspace, "source", ("folder",)
    if not is_policy_name(spec.policy):
        yield "policy", spec.policy, "source", ("file",)
    yield "destination", spec.destination, "publish", ("folder",)


#: a published article is ``<destination>/<job_id>/<job_id>`` plus this (``activities.publish``)
ARTICLE_SUFFIX = ".md"


def article_path(destination: str, job_id: str) -> Path:
    """Where a job's article is published, as its spec names the destination: a folder per
    job, ``<destination>/<job_id>/<job_id>.md`` (the receipt holds the resolved path)."""
    return Path(destination) / job_id / f"{job_id}{ARTICLE_SUFFIX}"


def read_policy(name: str, roots: PathRoots) -> tuple[ContextPolicy, os.stat_result | None]:
    """The policy a job's ``policy`` names: a shipped one by name, else the file, read
    inside ``roots`` and parsed so that its errors quote nothing it holds
    (``context.policy.policy_from_text``). The file's ``stat`` comes along (``None`` for a
    shipped policy) for callers that cache by it."""
    if is_policy_name(name):
        if not (POLICY_DIR / f"{name}.yaml").is_file():
            # the name came from the job's file: say what is wrong, never quote it
            shipped = ", ".join(sorted(p.stem for p in POLICY_DIR.glob("*.yaml")))
            raise PolicyError(f"field 'policy': unknown policy name (shipped: {shipped}); a "
                              "policy file is named by its path, e.g. ./policy.yaml")
        return load_policy(name), None
    located = locate(name, roots, "source", what="policy")
    try:
        st = os.stat(located.real)
        data = read_file(located, what="policy", max_bytes=POLICY_MAX_BYTES)
    except FileNotFoundError:
        raise PolicyError(f"cannot read policy {name!r}: it does not exist") from None
    except OSError as exc:
        raise PolicyError(f"cannot read policy {name!r}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyError(f"policy {name!r} is not UTF-8 text (byte {exc.start})") from None
    return policy_from_text(text, origin=repr(name)), st


def check_job_paths(spec: JobSpec, roots: PathRoots, locations: Mapping[str, str]) -> None:
    """Refuse ``spec`` unless every path it names is allowed by ``roots``:
    inside them, not special, and — where it already exists — of the right type (a document
    a file or folder, a page a file, a repository, workspace and destination a folder).
    A path that does not exist yet passes: a missing source is a recorded retrieval
    failure, a missing destination is created when publishing. With tenants bound, the
    roots are ``spec``'s tenant's own (``PathRoots.for_tenant``)."""
    roots = roots.for_tenant(spec.scope.tenant)
    for what, path, kind, types in job_paths(spec, locations):
        _check(what, path, kind, types, roots)


__all__ = [
    "ARTICLE_SUFFIX",
    "DEFAULT_MAX_FILE_BYTES",
    "POLICY_MAX_BYTES",
    "SPECIAL_FILESYSTEMS",
    "FolderListing",
    "Located",
    "PathRoots",
    "TenantBinding",
    "article_path",
    "check_job_path",
    "check_job_paths",
    "check_source",
    "existing_type",
    "is_remote",
    "job_paths",
    "list_folder",
    "locate",
    "locate_repository",
    "names_a_path",
    "open_folder",
    "read_file",
    "read_policy",
    "readable_source",
    "source_path",
    "undecodable_name",
]
