"""Reviewer keys on the client: make them, find them, and pin a job's reviewers to them.

``pressroom reviewer keygen NAME`` writes an Ed25519 private key to
``$PRESSROOM_HOME/keys/NAME.key`` (folder 0700, file 0600, never overwritten) and prints its
public key; ``--register`` also writes the public key to the operator's reviewer registry,
``$PRESSROOM_HOME/reviewers/NAME.pub`` (``contracts.reviewer_registry`` reads and writes
it, here as everywhere). ``approve`` / ``request-changes`` / ``reject`` /
``resolve`` / ``cancel`` sign with the reviewer's key (``--key``, ``$PRESSROOM_REVIEWER_KEY``
or the default path) and refuse a key file others can read, as ``ssh`` does.

``pin_reviewers`` runs at submit: a reviewer or operator the spec lists by name alone gets
the registry's public key written into the spec that is started, so the key the workflow
trusts is fixed for the job's whole life even if the registry changes later. A name found
nowhere is a ``JobSpecError`` before anything starts.

A name that mixes scripts, or imitates a name already registered (the reviewer registry's
and the console accounts' entries) or another the same spec lists, is refused by
``keygen``, ``reviewer add`` and ``pin_reviewers`` alike (``contracts.names``).

Errors name the file, never its content (a key file is a secret).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from contracts import reviewer_registry
from contracts.errors import JobError, JobSpecError
from contracts.job_spec import JobSpec, ReviewerSpec
from contracts.names import check_name
from contracts.signing import (
    SignatureError,
    generate_private_key,
    key_file_name,
    load_private_key,
    parse_public_key,
    private_key_pem,
    public_key_text,
)
from settings import Settings

__all__ = ["Keygen", "ReviewerKeyError", "check_reviewers", "keygen", "known_names",
           "pin_reviewers", "signing_key"]

#: a key file larger than this is not a PEM Ed25519 key; refuse before reading it whole
_MAX_KEY_BYTES = 16_384


class ReviewerKeyError(JobError):
    """A reviewer key cannot be created, found or used; the message names the file."""


@dataclass(frozen=True)
class Keygen:
    private_key: Path
    public_key: str
    registered: Path | None


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with ``mode``; refuse to replace anything (and any symlink)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise ReviewerKeyError(f"{path} already exists; not overwriting a key") from None
    except OSError as exc:
        raise ReviewerKeyError(f"cannot create {path}: {exc.strerror}") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def known_names(settings: Settings) -> list[str]:
    """The names already registered, as their entries' file stems: the reviewer registry's
    ``<name>.pub`` and the review console's ``<name>.json`` accounts (``contracts.names``
    compares them by confusable skeleton)."""
    found = set(reviewer_registry.names(settings.reviewers_dir))
    try:
        entries = os.listdir(settings.console_accounts_dir)
    except OSError:
        entries = []
    found.update(e.removesuffix(".json") for e in entries
                 if e.endswith(".json") and not e.startswith("."))
    return sorted(found)


def keygen(settings: Settings, name: str, *, out: Path | None = None,
           register: bool = False) -> Keygen:
    """A new key pair for ``name``; the private key is written 0600, never overwritten.
    A name that mixes scripts or imitates a registered one is refused first
    (``contracts.names``)."""
    if not name.strip():
        raise ReviewerKeyError("a reviewer name is needed")
    check_name(name, known_names(settings))
    key = generate_private_key()
    if out is None:
        settings.keys_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        out = settings.keys_dir / f"{key_file_name(name)}.key"
    _write_new(out, private_key_pem(key), 0o600)
    public = public_key_text(key)
    registered = None
    if register:
        try:
            registered = reviewer_registry.write_entry(settings.reviewers_dir, name, public)
        except reviewer_registry.RegistryEntryExists:
            raise ReviewerKeyError(f"{reviewer_registry.entry_path(settings.reviewers_dir, name)}"
                                   " already exists; not overwriting a key") from None
        except reviewer_registry.RegistryError as exc:
            raise ReviewerKeyError(str(exc)) from None
    return Keygen(private_key=out, public_key=public, registered=registered)


def signing_key(settings: Settings, signer: str, key_path: Path | None = None
                ) -> Ed25519PrivateKey:
    """``signer``'s private key: ``key_path``, ``$PRESSROOM_REVIEWER_KEY`` or the default."""
    path = key_path or settings.reviewer_key or (
        settings.keys_dir / f"{key_file_name(signer)}.key")
    try:
        # O_NONBLOCK: a FIFO put in the key's place cannot hang the command
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        # a new key would not be the one a job pinned for this name, so the hint names
        # the two ways to sign with that one (SECURITY.md §8)
        raise ReviewerKeyError(f"no key for {signer!r} at {path}: pass the key file the job "
                               f"pinned for {signer!r} with --key, or sign as the console "
                               f"account {signer!r} (--password-stdin, or asked on a "
                               "terminal)") from None
    except OSError as exc:  # a symbolic link (ELOOP), a folder, no permission
        raise ReviewerKeyError(f"cannot open key {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)  # before fdopen, which raises for a folder
        if not stat.S_ISREG(info.st_mode):
            raise ReviewerKeyError(f"key {path} is not a regular file")
        if info.st_mode & 0o077:
            raise ReviewerKeyError(f"key {path} is readable by others (mode "
                                   f"{stat.S_IMODE(info.st_mode):o}); chmod 600 it")
        if info.st_size > _MAX_KEY_BYTES:
            raise ReviewerKeyError(f"key {path} is too large to be an Ed25519 key")
        pem = os.read(fd, _MAX_KEY_BYTES)
    finally:
        os.close(fd)
    try:
        return load_private_key(pem, origin=str(path))
    except SignatureError as exc:
        raise ReviewerKeyError(str(exc)) from None


def _registered(settings: Settings, name: str) -> str | None:
    """``name``'s registered public key (``contracts.reviewer_registry``: a symbolic link
    refused), checked to be one; ``None`` when there is no entry."""
    path = reviewer_registry.entry_path(settings.reviewers_dir, name)
    try:
        text = reviewer_registry.read_entry(settings.reviewers_dir, name)
    except reviewer_registry.RegistryError as exc:
        raise JobSpecError(str(exc)) from None
    if text is None:
        return None
    try:
        parse_public_key(text)
    except SignatureError as exc:
        raise JobSpecError(f"reviewer registry entry {path}: {exc}") from None
    return text


def pin_reviewers(spec: JobSpec, settings: Settings) -> tuple[JobSpec, list[str]]:
    """The spec with every name-only reviewer/operator pinned to its registry key.

    Returns the pinned spec and one line per pinned name. ``JobSpecError`` names a
    reviewer found neither in the spec nor in the registry; ``NameRefused`` one whose name
    mixes scripts or imitates a registered name or another the spec lists.
    """
    people = [*spec.review.reviewers, *spec.review.operators]
    known = known_names(settings)
    for index, person in enumerate(people):
        others = [p.name for p in people[:index]]
        check_name(person.name, [*known, *others],
                   what=f"job spec {spec.job_id}: field 'review': reviewer")
    if not spec.review.unpinned():
        return spec, []
    pinned: dict[str, tuple[str, list[str]]] = {}  # name → (key, the roles it is pinned for)
    missing: list[str] = []

    def pin(people: list[ReviewerSpec], role: str) -> list[ReviewerSpec]:
        out = []
        for person in people:
            if person.public_key is None:
                key = _registered(settings, person.name)
                if key is None:
                    missing.append(person.name)
                    out.append(person)
                    continue
                pinned.setdefault(person.name, (key, []))[1].append(role)
                person = person.model_copy(update={"public_key": key})
            out.append(person)
        return out

    review = spec.review.model_copy(update={
        "reviewers": pin(list(spec.review.reviewers), "reviewer"),
        "operators": pin(list(spec.review.operators), "operator")})
    # one line per person: a reviewer who is also an operator is one key, pinned once
    lines = [f"{' and '.join(roles)} {name}: pinned {key[:20]}… from {settings.reviewers_dir}"
             for name, (key, roles) in pinned.items()]
    if missing:
        raise JobSpecError(
            f"job spec {spec.job_id}: field 'review.reviewers': no public key for "
            f"{sorted(missing)} — list `{{name: ..., public_key: ed25519:...}}` or register "
            f"them in {settings.reviewers_dir} (`pressroom reviewer add NAME` for a console "
            "account, or `pressroom reviewer keygen NAME --register`)")
    return spec.model_copy(update={"review": review}), lines


def check_reviewers(spec: JobSpec, settings: Settings) -> None:
    """``pressroom check`` / ``run``: the reviewers ``pin_reviewers`` would pin (nothing is
    written); with ``registered_reviewers_only`` also every pinned key the registry's, as
    the worker will require (``activities.reviewer_registry``). ``JobSpecError`` names the
    people, never a key."""
    pinned, _lines = pin_reviewers(spec, settings)
    if not settings.registered_reviewers_only:
        return
    for role, people in (("reviewer", pinned.review.reviewers),
                         ("operator", pinned.review.operators)):
        for person in people:
            if person.public_key != _registered(settings, person.name):
                raise JobSpecError(
                    f"{role} {person.name!r} is not in the reviewer registry "
                    f"{settings.reviewers_dir} with the key the spec pins; the workers accept "
                    "only registered reviewers (PRESSROOM_REGISTERED_REVIEWERS_ONLY)")
