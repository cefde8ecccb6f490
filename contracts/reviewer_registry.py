"""The operator's reviewer registry: the one module every reader and writer of it uses.

The registry is a folder of ``<name>.pub`` files (``key_file_name(name)``), each holding one
``ed25519:…`` public key: ``Settings.reviewers_dir``, ``$PRESSROOM_HOME/reviewers``. Its
writers are ``pressroom reviewer keygen --register`` (``cli.reviewer_keys``) and
``pressroom reviewer add`` (``webconsole.accounts.register_public_key``); its readers are
``pressroom run`` / ``check`` pinning a name-only reviewer (``cli.reviewer_keys``), the
worker's registered-reviewers-only check where a spec is stored
(``activities.reviewer_registry``) and its registry check at publish
(``activities.publish.check_registry``). Every caller passes the folder it was given
(``Settings.reviewers_dir``, on the worker ``ActivityRuntime.reviewers_dir``), never one it
rebuilds from the environment.

The same safety everywhere: an entry that is a symbolic link is refused, by readers and
writers alike (a link could point a worker at any file, or a write through it anywhere);
an entry that is not a regular file (a FIFO, a folder) or too large to be a key is refused
without hanging or reading it whole; a write never replaces an entry unless asked to, and
then atomically. Errors (``RegistryError``) name the file, never its content; each caller
turns them into its own error type.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from contracts.errors import JobError
from contracts.signing import key_file_name

__all__ = ["SUFFIX", "RegistryEntryExists", "RegistryError", "entry_exists", "entry_path",
           "names", "read_entry", "write_entry"]

#: a registry entry's file suffix
SUFFIX = ".pub"
#: an entry larger than this is not one public key; refused before reading it whole
_MAX_ENTRY_BYTES = 4096
_READ_FLAGS = (os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0))
_WRITE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                | getattr(os, "O_CLOEXEC", 0))


class RegistryError(JobError):
    """A registry entry cannot be read or written; the message names the file."""


class RegistryEntryExists(RegistryError):
    """``write_entry`` without ``replace`` found an entry already there."""


def entry_path(registry: Path, name: str) -> Path:
    """Where ``registry`` keeps ``name``'s public key."""
    return registry / f"{key_file_name(name)}{SUFFIX}"


def entry_exists(registry: Path, name: str) -> bool:
    """Whether anything (a symbolic link included) stands at ``name``'s entry."""
    return os.path.lexists(entry_path(registry, name))


def names(registry: Path) -> list[str]:
    """The names registered, as their entries' file stems (none: no registry yet)."""
    try:
        entries = os.listdir(registry)
    except OSError:
        return []
    return sorted(e[:-len(SUFFIX)] for e in entries
                  if e.endswith(SUFFIX) and not e.startswith("."))


def read_entry(registry: Path, name: str) -> str | None:
    """The public key text ``registry`` holds for ``name`` (stripped; not parsed), or
    ``None`` when there is no entry. ``RegistryError`` when the entry is a symbolic link,
    not a regular file, too large or not ASCII, or cannot be read."""
    path = entry_path(registry, name)
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise RegistryError(f"reviewer registry entry {path} cannot be read: it is a "
                                "symbolic link") from None
        raise RegistryError(f"reviewer registry entry {path} cannot be read "
                            f"({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RegistryError(f"reviewer registry entry {path} cannot be read: it is not "
                                "a regular file")
        if info.st_size > _MAX_ENTRY_BYTES:
            raise RegistryError(f"reviewer registry entry {path} cannot be read: it is too "
                                "large to be a public key")
        raw = os.read(fd, _MAX_ENTRY_BYTES + 1)
    except OSError as exc:
        raise RegistryError(f"reviewer registry entry {path} cannot be read "
                            f"({exc.strerror})") from None
    finally:
        os.close(fd)
    try:
        return raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise RegistryError(f"reviewer registry entry {path} cannot be read: it is not "
                            "ASCII") from None


def write_entry(registry: Path, name: str, public_key: str, *,
                replace: bool = False) -> Path:
    """Write ``public_key`` as ``name``'s entry (mode 0644) and return its path.

    Without ``replace`` an entry already there is ``RegistryEntryExists`` (it may be a key
    in use), also when one appears while writing; with it the entry is replaced
    atomically. A symbolic link in the entry's place is refused, never written through.
    """
    registry.mkdir(parents=True, exist_ok=True)
    path = entry_path(registry, name)
    if path.is_symlink():
        raise RegistryError(f"{path} is a symbolic link; refusing to write it")
    if not replace and path.exists():
        raise RegistryEntryExists(f"{path} already registers a key for {name!r}")
    temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(temp, _WRITE_FLAGS, 0o644)
        try:
            os.fchmod(fd, 0o644)
            os.write(fd, (public_key + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(temp, path)
        else:
            try:
                os.link(temp, path, follow_symlinks=False)
            except FileExistsError:
                raise RegistryEntryExists(f"{path} already registers a key for "
                                          f"{name!r}") from None
    except OSError as exc:
        raise RegistryError(f"cannot write {path} ({exc.strerror})") from None
    finally:
        temp.unlink(missing_ok=True)
    return path
