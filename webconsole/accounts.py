"""Reviewer accounts of the review console: a password, and a signing key locked by it.

One JSON file per reviewer in ``Settings.console_accounts_dir``
(``$PRESSROOM_HOME/console/accounts``, folder 0700, files 0600; Pressroom private state, so
no job path can ever read it: ``Settings.private_paths``). The file is named
``<contracts.signing.key_file_name(name)>.json`` and holds:

* ``name`` (as given) and ``normalized`` (``contracts.signing.normalize_name``);
* ``password_hash``: argon2id (``argon2.PasswordHasher``), checked at sign-in;
* ``private_key``: the reviewer's Ed25519 key as PKCS#8 PEM encrypted with
  ``BestAvailableEncryption`` — never stored or kept in memory decrypted between
  requests. ``signing_key(name, password)`` decrypts it for the one request that signs a
  decision, so a stolen session cookie alone cannot approve anything;
* ``key_kdf``: how the PEM's passphrase is derived from the password. The PEM's own KDF is
  PBKDF2-SHA256 with 2048 iterations (what ``cryptography`` writes), about 500 times
  cheaper per guess than the argon2 hash beside it, so a stolen file would be attacked
  through the PEM. The passphrase is therefore argon2id(password, per-account salt) with
  the hasher's cost parameters: guessing costs at least one argon2 run either way;
* ``public_key`` (``ed25519:…``, what the registry and job specs list) and ``created_at``.

``register_public_key`` writes that public key to the operator's reviewer registry
(``Settings.reviewers_dir / <name>.pub``, as ``pressroom reviewer keygen --register`` does),
so ``pressroom run`` pins it into the job specs that list the reviewer by name.

Writes are atomic (a temporary file in the same folder, then a rename or a no-clobber hard
link), every open is relative to the folder's descriptor with ``O_NOFOLLOW``, and a
symbolic link where the folder or a file should be is refused, never followed.

Single-use sign-in links (``one_time_token`` / ``redeem_token``, for ``make demo``): only
the token's sha256 is stored, with its expiry and the account it signs in, as
``tokens/<sha256>.json`` in the same folder; redeeming claims the file by renaming it
(so two redeems of one token cannot both succeed) and deletes it.

Errors (one tree, all ``AccountError``; messages name the account or the file, never a
password, a hash or key material):

* ``AccountError`` — base.
  * ``InvalidAccountName`` — not a name a reviewer may have (the store's identifier rule,
    printable, at most 200 characters).
  * ``WeakPassword`` — shorter than ``MIN_PASSWORD_LENGTH`` (12) characters.
  * ``AccountExists`` — ``add`` without ``replace`` for a name that has an account (or a
    name whose file another account already uses).
  * ``UnknownAccount`` — no account of that name.
  * ``WrongPassword`` — ``signing_key`` with a password that does not unlock the key.
  * ``AccountStorageError`` — the folder or a file is unsafe (a symbolic link, not a
    regular file, readable by others) or unreadable/corrupt.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from argon2.low_level import Type, hash_secret_raw
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from contracts import reviewer_registry
from contracts.identifiers import store_name
from contracts.signing import (
    generate_private_key,
    key_file_name,
    normalize_name,
    public_key_text,
)

__all__ = [
    "MIN_PASSWORD_LENGTH",
    "AccountError",
    "AccountExists",
    "AccountStorageError",
    "InvalidAccountName",
    "ReviewerAccounts",
    "UnknownAccount",
    "WeakPassword",
    "WrongPassword",
    "register_public_key",
]

MIN_PASSWORD_LENGTH = 12
MAX_NAME_LENGTH = 200
#: an account file is a few hundred bytes; anything larger is not one
_MAX_FILE_BYTES = 65_536
_FORMAT = 1
_TOKENS = "tokens"
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{20,100}$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class AccountError(Exception):
    """An account cannot be created, found, used or stored (see the module docstring)."""


class InvalidAccountName(AccountError):
    """Not a name a reviewer account may have."""


class WeakPassword(AccountError):
    """The password is too short."""


class AccountExists(AccountError):
    """An account of that name (or using that file) exists and ``replace`` was not given."""


class UnknownAccount(AccountError):
    """No account of that name."""


class WrongPassword(AccountError):
    """The password does not unlock the account's signing key."""


class AccountStorageError(AccountError):
    """The accounts folder or an account file is unsafe, unreadable or corrupt."""


def _check_name(name: str) -> str:
    """``name`` if a reviewer may have it (as ``contracts.job_spec.ReviewerSpec`` checks)."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidAccountName("a reviewer name is needed")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidAccountName(f"a reviewer name has at most {MAX_NAME_LENGTH} characters")
    if any(not c.isprintable() for c in name):
        raise InvalidAccountName("a reviewer name must be printable text")
    try:
        store_name(name)
    except ValueError as exc:
        raise InvalidAccountName(f"reviewer name refused: {exc}") from None
    return name


def _check_password(password: str) -> None:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise WeakPassword(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")


class ReviewerAccounts:
    """The console's reviewer accounts in ``folder`` (see the module docstring).

    ``hasher``: the argon2 parameters for new hashes and key passphrases (the default
    ``PasswordHasher()``; tests pass cheap ones). ``clock``: seconds since the epoch, for
    token expiry.
    """

    def __init__(self, folder: Path, *, hasher: PasswordHasher | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.folder = Path(folder)
        self._hasher = hasher or PasswordHasher()
        self._clock = clock
        self._dummy_hash: str | None = None

    # --- public API ---------------------------------------------------------------------

    def add(self, name: str, password: str, *, replace: bool = False,
            key: Ed25519PrivateKey | None = None) -> str:
        """Create ``name``'s account with a new signing key (or ``key``: the demo gives its
        reviewer's existing, registered key); returns its public key text.

        ``AccountExists`` unless ``replace`` (which makes a new key: the old one stops
        signing, and jobs pinned to it must be resubmitted). ``WeakPassword``,
        ``InvalidAccountName``.
        """
        _check_name(name)
        _check_password(password)
        file = self._file_name(name)
        with self._folder() as dfd:
            if not replace:
                existing = self._read_json(dfd, file, missing_ok=True)
                if existing is not None:
                    who = ("" if existing.get("normalized") == normalize_name(name)
                           else " (another account uses the same file name)")
                    raise AccountExists(f"reviewer account {name!r} already exists{who}; "
                                        "pass replace to make a new key")
            key = key or generate_private_key()
            public = public_key_text(key)
            kdf = {"alg": "argon2id", "salt": base64.b64encode(os.urandom(16)).decode("ascii"),
                   "time_cost": self._hasher.time_cost,
                   "memory_cost": self._hasher.memory_cost,
                   "parallelism": self._hasher.parallelism, "hash_len": 32}
            pem = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(_passphrase(password, kdf)))
            record = {
                "v": _FORMAT, "name": name, "normalized": normalize_name(name),
                "password_hash": self._hasher.hash(password),
                "private_key": pem.decode("ascii"), "key_kdf": kdf, "public_key": public,
                "created_at": datetime.now(UTC).isoformat(),
            }
            self._write_json(dfd, file, record, replace=replace)
        return public

    def authenticate(self, name: str, password: str) -> str | None:
        """The normalized name when ``password`` is ``name``'s, else ``None``.

        An unknown or invalid name still costs one argon2 verification, so the answer's
        timing does not tell which names have accounts. A hash made with older parameters
        is rehashed on success.
        """
        record = None
        try:
            _check_name(name)
            with self._folder(create=False) as dfd:
                record = self._load(dfd, name)
        except (InvalidAccountName, UnknownAccount):
            pass
        if record is None:
            self._dummy_verify(password)
            return None
        stored = str(record["password_hash"])
        try:
            self._hasher.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return None
        if self._hasher.check_needs_rehash(stored):
            with self._folder() as dfd:
                fresh = self._load(dfd, name)
                if fresh.get("password_hash") == stored:  # nobody replaced it meanwhile
                    fresh["password_hash"] = self._hasher.hash(password)
                    self._write_json(dfd, self._file_name(name), fresh, replace=True)
        return str(record["normalized"])

    def signing_key(self, name: str, password: str) -> Ed25519PrivateKey:
        """``name``'s private key, decrypted with ``password`` for one signature; drop it
        after signing. ``WrongPassword``, ``UnknownAccount``."""
        with self._folder(create=False) as dfd:
            record = self._load(dfd, _check_name(name))
        kdf = record.get("key_kdf")
        if not isinstance(kdf, dict):
            raise AccountStorageError(f"account {name!r}: no key derivation recorded")
        try:
            key = serialization.load_pem_private_key(
                str(record["private_key"]).encode("ascii"), password=_passphrase(password, kdf))
        except (ValueError, TypeError):
            raise WrongPassword(f"the password does not unlock the signing key of {name!r}") \
                from None
        if not isinstance(key, Ed25519PrivateKey):
            raise AccountStorageError(f"account {name!r}: the stored key is not Ed25519")
        if public_key_text(key) != record.get("public_key"):
            raise AccountStorageError(f"account {name!r}: the stored key does not match its "
                                      "public key")
        return key

    def public_key(self, name: str) -> str:
        """``name``'s public key text (``ed25519:…``); ``UnknownAccount``."""
        with self._folder(create=False) as dfd:
            return str(self._load(dfd, _check_name(name))["public_key"])

    def exists(self, name: str) -> bool:
        try:
            self.public_key(name)
        except (UnknownAccount, InvalidAccountName):
            return False
        return True

    def names(self) -> list[str]:
        """The normalized names of every account, sorted."""
        found = []
        try:
            with self._folder(create=False) as dfd:
                for entry in sorted(os.listdir(dfd)):
                    if not entry.endswith(".json") or entry.startswith("."):
                        continue
                    record = self._read_json(dfd, entry, missing_ok=True)
                    if record is not None:
                        found.append(str(record["normalized"]))
        except UnknownAccount:
            return []
        return sorted(found)

    def one_time_token(self, name: str, ttl_s: float = 600) -> str:
        """A single-use sign-in token for ``name``, valid ``ttl_s`` seconds. Only its sha256
        is stored. ``UnknownAccount``."""
        with self._folder() as dfd:
            normalized = str(self._load(dfd, _check_name(name))["normalized"])
            token = secrets.token_urlsafe(32)
            with self._subfolder(dfd, _TOKENS) as tfd:
                self._write_json(tfd, f"{_token_digest(token)}.json", {
                    "normalized": normalized, "file": self._file_name(name),
                    "expires_at": self._clock() + ttl_s}, replace=False)
        return token

    def redeem_token(self, token: str) -> str | None:
        """The normalized name ``token`` signs in, once; ``None`` when it is unknown, used,
        expired, or its account is gone."""
        if not isinstance(token, str) or not _TOKEN.match(token):
            return None
        digest = _token_digest(token)
        claimed = f".{digest}.{secrets.token_hex(8)}.redeeming"
        try:
            with self._folder(create=False) as dfd, self._subfolder(dfd, _TOKENS,
                                                                    create=False) as tfd:
                try:  # the rename is the claim: only one redeemer gets the file
                    os.rename(f"{digest}.json", claimed, src_dir_fd=tfd, dst_dir_fd=tfd)
                except FileNotFoundError:
                    return None
                try:
                    entry = self._read_json(tfd, claimed, missing_ok=False)
                finally:
                    os.unlink(claimed, dir_fd=tfd)
                assert entry is not None
                if float(entry.get("expires_at", 0)) <= self._clock():
                    return None
                account = self._read_json(dfd, str(entry.get("file", "")), missing_ok=True)
        except UnknownAccount:
            return None
        if account is None or account.get("normalized") != entry.get("normalized"):
            return None
        return str(account["normalized"])

    # --- files --------------------------------------------------------------------------

    @staticmethod
    def _file_name(name: str) -> str:
        return f"{key_file_name(name)}.json"

    def _load(self, dfd: int, name: str) -> dict[str, Any]:
        record = self._read_json(dfd, self._file_name(name), missing_ok=True)
        if record is None or record.get("normalized") != normalize_name(name):
            raise UnknownAccount(f"no reviewer account {name!r}")
        return record

    @contextmanager
    def _folder(self, *, create: bool = True) -> Iterator[int]:
        """A descriptor of the accounts folder (made 0700 when ``create``); a symbolic link
        in its place is refused."""
        if create:
            self.folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                os.mkdir(self.folder, 0o700)
            except FileExistsError:
                pass
            except OSError as exc:
                raise AccountStorageError(f"cannot create {self.folder}: {exc.strerror}") \
                    from None
        try:
            dfd = os.open(self.folder, _DIR_FLAGS)
        except FileNotFoundError:
            raise UnknownAccount(f"no reviewer accounts in {self.folder}") from None
        except OSError as exc:  # ELOOP / ENOTDIR: a symbolic link or a file in its place
            raise AccountStorageError(f"accounts folder {self.folder} cannot be used "
                                      f"({exc.strerror})") from None
        try:
            info = os.fstat(dfd)
            if stat.S_IMODE(info.st_mode) != 0o700:
                if info.st_uid != os.getuid():
                    raise AccountStorageError(f"accounts folder {self.folder} is not yours")
                os.fchmod(dfd, 0o700)
            yield dfd
        finally:
            os.close(dfd)

    @contextmanager
    def _subfolder(self, dfd: int, name: str, *, create: bool = True) -> Iterator[int]:
        if create:
            try:
                os.mkdir(name, 0o700, dir_fd=dfd)
            except FileExistsError:
                pass
        try:
            sfd = os.open(name, _DIR_FLAGS, dir_fd=dfd)
        except FileNotFoundError:
            raise UnknownAccount(f"no {name} in {self.folder}") from None
        except OSError as exc:
            raise AccountStorageError(f"{self.folder / name} cannot be used "
                                      f"({exc.strerror})") from None
        try:
            yield sfd
        finally:
            os.close(sfd)

    def _read_json(self, dfd: int, file: str, *, missing_ok: bool) -> dict[str, Any] | None:
        where = self.folder / file
        try:
            fd = os.open(file, _READ_FLAGS, dir_fd=dfd)
        except FileNotFoundError:
            if missing_ok:
                return None
            raise AccountStorageError(f"{where} is missing") from None
        except OSError as exc:  # ELOOP: a symbolic link
            raise AccountStorageError(f"cannot open {where} ({exc.strerror})") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise AccountStorageError(f"{where} is not a regular file")
            if info.st_mode & 0o077:
                raise AccountStorageError(f"{where} is readable by others (mode "
                                          f"{stat.S_IMODE(info.st_mode):o}); chmod 600 it")
            if info.st_size > _MAX_FILE_BYTES:
                raise AccountStorageError(f"{where} is too large to be an account file")
            raw = os.read(fd, _MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
        try:
            record = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise AccountStorageError(f"{where} is not valid JSON") from None
        if not isinstance(record, dict):
            raise AccountStorageError(f"{where} is not an account record")
        return record

    def _write_json(self, dfd: int, file: str, record: dict[str, Any], *,
                    replace: bool) -> None:
        """Write ``file`` atomically (0600): a temporary file, then a rename (``replace``)
        or a hard link that fails if ``file`` exists. Never through a symbolic link: the
        temporary file is created ``O_EXCL | O_NOFOLLOW``, and a rename or link replaces a
        directory entry, never what a link points to."""
        where = self.folder / file
        try:
            current = os.lstat(file, dir_fd=dfd)
        except FileNotFoundError:
            current = None
        if current is not None and stat.S_ISLNK(current.st_mode):
            raise AccountStorageError(f"{where} is a symbolic link; refusing to write it")
        if current is not None and not replace:
            raise AccountExists(f"{where} already exists")
        temp = f".{file}.{secrets.token_hex(8)}.tmp"
        data = json.dumps(record, sort_keys=True, indent=1).encode("utf-8")
        try:
            fd = os.open(temp, _WRITE_FLAGS, 0o600, dir_fd=dfd)
        except OSError as exc:
            raise AccountStorageError(f"cannot write in {self.folder} ({exc.strerror})") \
                from None
        try:
            try:
                os.fchmod(fd, 0o600)  # whatever the umask
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            if replace:
                os.rename(temp, file, src_dir_fd=dfd, dst_dir_fd=dfd)
            else:
                try:
                    os.link(temp, file, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
                except FileExistsError:
                    raise AccountExists(f"{where} already exists") from None
        except OSError as exc:
            raise AccountStorageError(f"cannot write {where} ({exc.strerror})") from None
        finally:
            try:
                os.unlink(temp, dir_fd=dfd)
            except FileNotFoundError:
                pass
        os.fsync(dfd)

    def _dummy_verify(self, password: str) -> None:
        """One argon2 verification that always fails, as long as a real one takes."""
        if self._dummy_hash is None:
            self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(24))
        try:
            self._hasher.verify(self._dummy_hash, password)
        except (VerificationError, InvalidHashError):
            pass


def _passphrase(password: str, kdf: dict[str, Any]) -> bytes:
    """The PEM's passphrase: argon2id of the password with the account's salt and costs."""
    try:
        if kdf.get("alg") != "argon2id":
            raise ValueError
        salt = base64.b64decode(str(kdf["salt"]), validate=True)
        raw = hash_secret_raw(password.encode("utf-8"), salt,
                              time_cost=int(kdf["time_cost"]),
                              memory_cost=int(kdf["memory_cost"]),
                              parallelism=int(kdf["parallelism"]),
                              hash_len=int(kdf["hash_len"]), type=Type.ID)
    except (KeyError, ValueError, TypeError, binascii.Error):
        raise AccountStorageError("the account's key derivation record is unusable") from None
    return base64.b64encode(raw)


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def register_public_key(reviewers_dir: Path, name: str, public_key: str, *,
                        replace: bool = False) -> Path:
    """Write ``public_key`` to the reviewer registry as ``<key_file_name(name)>.pub``
    (mode 0644, like ``pressroom reviewer keygen --register``; ``contracts.reviewer_registry``
    writes it); returns the path.

    ``AccountExists`` when an entry is there and ``replace`` is not given (it may be a
    ``keygen`` key in use); a symbolic link in its place is refused, never written through.
    """
    _check_name(name)
    try:
        return reviewer_registry.write_entry(reviewers_dir, name, public_key, replace=replace)
    except reviewer_registry.RegistryEntryExists as exc:
        raise AccountExists(f"{exc}; pass replace to register the account's key "
                            "instead") from None
    except reviewer_registry.RegistryError as exc:
        raise AccountStorageError(str(exc)) from None
