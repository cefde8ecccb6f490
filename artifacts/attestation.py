"""Signed artifact revisions: an HMAC-SHA256 over a revision's fields, keyed per scope.

A content hash proves the bytes match the row, but whoever can write the row can
recompute it. With an attestation key configured (``PRESSROOM_ATTESTATION_KEYS``: a key
file, see ``load_keyring``), the store signs every revision it writes, and a reader holding
the same key file can tell a revision the store wrote from one somebody put into the
database directly: a changed field, a recomputed hash, a forged row or a signature copied
from another row or another tenant all fail ``Keyring.verify``.

What is signed (``mac_message``): every field of the revision row but its surrogate id —
kind, artifact id, revision, parent revision, content hash, writer, tenant, project, task,
trust, media type, size, creation time (UTC, microseconds) and metadata — after a version
tag and the key id, as one canonical JSON array, so no two rows share a message.

Keys: the file holds ``key_id:base64secret`` lines; the first is current (it signs new
revisions), the others only verify older ones (rotation: add a new first line, keep the
old ones as long as revisions signed with them must stay admissible). Each secret is a
master key; the key that signs a revision is derived from it per tenant and project
(HKDF-SHA256, the scope length-prefixed in ``info``), so a signature of one scope's row is
worthless in any other scope, even under the same key id.

Secrets never appear in a message, a ``repr`` or an error; errors name the file and line.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
import re
import stat
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from artifacts.errors import StoreError
from artifacts.types import ArtifactRecord, Attestation

__all__ = [
    "MAX_KEY_FILE_BYTES",
    "MIN_SECRET_BYTES",
    "AttestationKeyError",
    "Keyring",
    "Verdict",
    "add_key",
    "load_keyring",
    "mac_message",
    "new_key_line",
    "parse_keyring",
    "verify_record",
]

#: The version tag every signed message starts with; a new message layout gets a new tag.
VERSION = b"pressroom/artifact-attestation/v1"
_SALT = VERSION + b"/hkdf-salt"
_INFO = VERSION + b"/scope-key"
#: A secret shorter than this (decoded) is refused: HMAC-SHA256 wants a 256-bit key.
MIN_SECRET_BYTES = 32
MAX_KEY_FILE_BYTES = 64 * 1024
_KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: Derived per-scope keys kept per keyring (a worker serves a bounded number of scopes).
_DERIVED_KEYS = 4096

_VERSION_TAG = VERSION.decode("ascii")

Status = Literal["verified", "unsigned", "invalid"]


class AttestationKeyError(StoreError):
    """The attestation key file cannot be used; the message names the file and line,
    never a secret."""


@dataclass(frozen=True)
class Verdict:
    """What a keyring says of one revision.

    ``verified``: its attestation matches under ``key_id``. ``unsigned``: no keyring was
    configured, so only the bare content hash was checked. ``invalid``: a keyring is
    configured and the revision has no attestation, one under a key id it does not hold,
    or one that does not match the revision (``detail`` says which).
    """

    status: Status
    key_id: str | None = None
    detail: str = ""


UNSIGNED = Verdict("unsigned", None, "no attestation key configured")


def _field(value: str) -> bytes:
    data = value.encode("utf-8", "surrogatepass")
    return struct.pack(">I", len(data)) + data


def mac_message(key_id: str, record: ArtifactRecord) -> bytes:
    """The bytes an attestation signs: the version tag, the key id and every field of the
    revision row as one canonical JSON array (compact, ASCII with every other character
    escaped, object keys sorted) — a JSON array of strings cannot be read two ways.

    The metadata goes in as JSON, so it must be the plain JSON the store keeps (string
    keys; ``prepare_put`` hands the record the metadata as it will read back)."""
    created = record.created_at.astimezone(UTC).isoformat(timespec="microseconds")
    parent = "" if record.parent_revision is None else str(record.parent_revision)
    scope = record.scope
    fields = [_VERSION_TAG, key_id, record.kind.value, record.artifact_id,
              str(record.revision), parent, record.content_hash, record.writer, scope.tenant,
              scope.project, scope.task, record.trust, record.media_type, str(record.size),
              created, record.metadata]
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def _shown_key_id(key_id: str) -> str:
    """A key id as an error may show it (a stored one is database text, maybe anything)."""
    return repr(key_id) if _KEY_ID.fullmatch(key_id) else "<malformed key id>"


class Keyring:
    """The operator's attestation keys: the first signs, all verify (rotation).

    Built by ``load_keyring`` / ``parse_keyring``. The ``repr`` names the key ids only.
    """

    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        if not keys:
            raise AttestationKeyError("an attestation keyring needs at least one key")
        self._masters: dict[str, bytes] = {}
        for key_id, secret in keys:
            if not _KEY_ID.fullmatch(key_id):
                raise AttestationKeyError(f"attestation key id {_shown_key_id(key_id)} is "
                                          "not 1-64 of A-Z a-z 0-9 . _ -")
            if key_id in self._masters:
                raise AttestationKeyError(f"attestation key id {key_id!r} appears twice")
            if len(secret) < MIN_SECRET_BYTES:
                raise AttestationKeyError(f"attestation key {key_id!r} is {len(secret)} "
                                          f"bytes; at least {MIN_SECRET_BYTES} are needed")
            self._masters[key_id] = bytes(secret)
        self.current_key_id = keys[0][0]
        self._derived: dict[tuple[str, str, str], bytes] = {}

    @property
    def key_ids(self) -> tuple[str, ...]:
        """Every key id, the current one first."""
        return tuple(self._masters)

    def __repr__(self) -> str:
        return f"Keyring(current={self.current_key_id!r}, keys={list(self._masters)!r})"

    def _scope_key(self, key_id: str, tenant: str, project: str) -> bytes:
        slot = (key_id, tenant, project)
        found = self._derived.get(slot)
        if found is None:
            hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT,
                        info=_INFO + _field(tenant) + _field(project))
            found = hkdf.derive(self._masters[key_id])
            if len(self._derived) >= _DERIVED_KEYS:
                self._derived.clear()
            self._derived[slot] = found
        return found

    def _mac(self, key_id: str, record: ArtifactRecord) -> str:
        key = self._scope_key(key_id, record.scope.tenant, record.scope.project)
        return hmac.digest(key, mac_message(key_id, record), "sha256").hex()

    def sign(self, record: ArtifactRecord) -> Attestation:
        """The attestation of ``record`` under the current key."""
        return Attestation.model_construct(key_id=self.current_key_id,
                                           mac=self._mac(self.current_key_id, record))

    def verify(self, record: ArtifactRecord) -> Verdict:
        """Whether ``record`` carries a genuine attestation (see ``Verdict``)."""
        found = record.attestation
        if found is None:
            return Verdict("invalid", None, "the revision is unsigned (written without an "
                           "attestation key, or its attestation was removed)")
        if found.key_id not in self._masters:
            return Verdict("invalid", None, f"signed with key id {_shown_key_id(found.key_id)}, "
                           "which the attestation key file does not hold")
        expected = self._mac(found.key_id, record)
        if not hmac.compare_digest(expected, found.mac):
            return Verdict("invalid", found.key_id,
                           f"the attestation under key {found.key_id!r} does not match the "
                           "revision (changed or forged after it was signed)")
        return Verdict("verified", found.key_id, f"signed with key {found.key_id!r}")


def verify_record(keyring: Keyring | None, record: ArtifactRecord) -> Verdict:
    """``keyring.verify(record)``; ``unsigned`` when no keyring is configured."""
    return UNSIGNED if keyring is None else keyring.verify(record)


def parse_keyring(text: str, *, origin: str = "<keys>") -> Keyring:
    """A keyring from a key file's text: ``key_id:base64secret`` lines, the current key
    first; blank lines and ``#`` comments are skipped. Errors name ``origin`` and the line,
    never what is on it."""
    keys: list[tuple[str, bytes]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key_id, sep, encoded = line.partition(":")
        key_id, encoded = key_id.strip(), encoded.strip()
        where = f"attestation key file {origin}, line {number}"
        if not sep or not _KEY_ID.fullmatch(key_id):
            raise AttestationKeyError(f"{where}: expected key_id:base64secret with a key id "
                                      "of 1-64 of A-Z a-z 0-9 . _ -")
        try:
            secret = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise AttestationKeyError(f"{where}: the secret is not valid base64") from None
        if len(secret) < MIN_SECRET_BYTES:
            raise AttestationKeyError(f"{where}: the secret is {len(secret)} bytes; at least "
                                      f"{MIN_SECRET_BYTES} are needed")
        if any(key_id == seen for seen, _ in keys):
            raise AttestationKeyError(f"{where}: key id {key_id!r} appears twice")
        keys.append((key_id, secret))
    if not keys:
        raise AttestationKeyError(f"attestation key file {origin} holds no keys")
    return Keyring(keys)


def load_keyring(path: Path) -> Keyring:
    """The keyring in the key file at ``path``: a regular file (not a link), readable and
    writable by its owner only (mode 0600 or stricter), at most 64 KiB of ASCII."""
    try:  # not blocking on a FIFO, not following a link
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise AttestationKeyError(f"attestation key file {path} does not exist") from None
    except OSError as exc:
        raise AttestationKeyError(f"cannot open attestation key file {path}: "
                                  f"{exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise AttestationKeyError(f"attestation key file {path} is not a regular file")
    with os.fdopen(fd, "rb") as fh:
        if info.st_mode & 0o077:
            raise AttestationKeyError(
                f"attestation key file {path} is readable or writable by others (mode "
                f"{stat.S_IMODE(info.st_mode):o}); chmod 600 it")
        if info.st_size > MAX_KEY_FILE_BYTES:
            raise AttestationKeyError(f"attestation key file {path} is larger than "
                                      f"{MAX_KEY_FILE_BYTES} bytes")
        data = fh.read(MAX_KEY_FILE_BYTES + 1)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise AttestationKeyError(f"attestation key file {path} is not ASCII text") from None
    return parse_keyring(text, origin=str(path))



def new_key_line(key_id: str) -> str:
    """A fresh ``key_id:base64secret`` line (32 random bytes)."""
    if not _KEY_ID.fullmatch(key_id):
        raise AttestationKeyError(f"attestation key id {_shown_key_id(key_id)} is not 1-64 "
                                  "of A-Z a-z 0-9 . _ -")
    return f"{key_id}:{base64.b64encode(os.urandom(MIN_SECRET_BYTES)).decode('ascii')}"


def add_key(path: Path, key_id: str | None = None) -> Keyring:
    """Create the key file at ``path`` (mode 0600) with one fresh key, or rotate an existing
    one: a fresh key becomes its first line (the current key), the others stay to verify
    what they signed. ``key_id`` defaults to ``k<n>``, the first unused of k1, k2, …
    Returns the new keyring; the secret is never returned or printed."""
    old_text = ""
    taken: tuple[str, ...] = ()
    if os.path.lexists(path):
        taken = load_keyring(path).key_ids  # the same checks as a worker's
        old_text = path.read_text(encoding="ascii")
    if key_id is None:
        key_id = next(f"k{n}" for n in range(1, len(taken) + 2) if f"k{n}" not in taken)
    if key_id in taken:
        raise AttestationKeyError(f"attestation key file {path} already holds key id "
                                  f"{key_id!r}")
    text = new_key_line(key_id) + "\n" + old_text
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(partial, flags, 0o600)
    except OSError as exc:
        raise AttestationKeyError(f"cannot write attestation key file {path}: "
                                  f"{exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(partial, path)
    finally:
        if os.path.lexists(partial):
            os.unlink(partial)
    return parse_keyring(text, origin=str(path))
