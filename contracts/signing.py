"""Signed commands: who approved, resolved or cancelled a job, proven by an Ed25519 key.

A reviewer's name is only a claim; anyone who can reach the Temporal namespace can type
any name. So every decision that changes what a job does — a review decision, a
resolution, a cancel — carries a ``Signature`` over a canonical statement of exactly what
was decided: the job id, the command's own fields (for a review: the draft revision and
content hash the reviewer saw, the destination, the decision, the hash of the comments),
the signer's name, a timestamp and a random nonce. The workflow verifies it in its Update
validator (Ed25519 verification is deterministic and public keys are not secret, so this is
safe in workflow code), refuses replays by nonce and by timestamp, and publish verifies the
stored decision once more before it writes (SECURITY.md).

The keys: ``pressroom reviewer keygen NAME`` writes an Ed25519 private key (PKCS#8 PEM,
mode 0600) and prints the public key as ``ed25519:<base64 of the 32 raw bytes>``; a job
spec lists each reviewer's name with that public key, or the name alone, which
``pressroom run`` resolves against the operator's reviewer registry and pins into the spec
it submits.

Names are compared after ``normalize_name`` (Unicode NFKC, then case folding, then trimmed),
so ``Agent:Research-Bot`` is the principal ``agent:research-bot`` and cannot approve its
own draft.

Cost: one signature (64 bytes, base64 in history) and one verification (~0.1 ms) per
command; the ``cryptography`` package is a dependency.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import secrets
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "PUBLIC_KEY_PREFIX",
    "Purpose",
    "Signature",
    "SignatureError",
    "comments_hash",
    "generate_private_key",
    "key_file_name",
    "load_private_key",
    "normalize_name",
    "parse_public_key",
    "private_key_pem",
    "public_key_text",
    "sign",
    "statement",
    "verify",
]

PUBLIC_KEY_PREFIX = "ed25519:"
#: what a signature is for; part of the signed statement, so a signed resolution can never
#: be replayed as a review decision
Purpose = Literal["review", "resolve", "cancel", "tool_approval", "tool_rejection", "fork"]
_STATEMENT_VERSION = "pressroom-signed-command-v1"
_NONCE = re.compile(r"^[0-9a-f]{32}$")
#: a signature dated this far after the verifier's clock is refused (clock skew allowance)
MAX_CLOCK_SKEW = timedelta(minutes=5)


class SignatureError(ValueError):
    """A signature is missing, malformed, from an unlisted key, invalid, or replayed."""


def normalize_name(name: str) -> str:
    """The form in which principal and reviewer names are compared: NFKC, casefold, trim."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


def key_file_name(name: str) -> str:
    """A file name for ``name``'s key (normalized; characters unsafe in a path become ``_``)."""
    return re.sub(r"[^a-z0-9._-]", "_", normalize_name(name)).lstrip(".") or "_"


def comments_hash(comments: Iterable[str]) -> str:
    """``sha256:`` of the comments as canonical JSON: the signature binds them exactly."""
    text = json.dumps(list(comments), ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class Signature(BaseModel):
    """Who signed a command, when, with which key, and the Ed25519 signature itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    signer: str = Field(min_length=1, max_length=200)
    public_key: str = Field(min_length=1, max_length=100)
    #: ISO 8601 UTC time of signing (the signer's clock)
    signed_at: str = Field(min_length=1, max_length=40)
    #: 16 random bytes as hex: a decision is accepted once
    nonce: str
    #: base64 of the 64-byte Ed25519 signature over ``statement(...)``
    value: str = Field(min_length=1, max_length=200)

    @field_validator("nonce")
    @classmethod
    def _nonce_shape(cls, value: str) -> str:
        if not _NONCE.match(value):
            raise ValueError("nonce must be 32 lowercase hex digits")
        return value

    def signed_time(self) -> datetime:
        try:
            when = datetime.fromisoformat(self.signed_at)
        except ValueError:
            raise SignatureError(f"signature time {self.signed_at!r} is not ISO 8601") from None
        if when.tzinfo is None:
            raise SignatureError("signature time has no time zone")
        return when


def parse_public_key(text: str) -> Ed25519PublicKey:
    """``ed25519:<base64>`` → a public key; ``SignatureError`` names what is wrong."""
    if not text.startswith(PUBLIC_KEY_PREFIX):
        raise SignatureError(f"public key must start with {PUBLIC_KEY_PREFIX!r}")
    try:
        raw = base64.b64decode(text.removeprefix(PUBLIC_KEY_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError("public key is not valid base64") from None
    if len(raw) != 32:
        raise SignatureError(f"an Ed25519 public key has 32 bytes, this one {len(raw)}")
    return Ed25519PublicKey.from_public_bytes(raw)


def public_key_text(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return PUBLIC_KEY_PREFIX + base64.b64encode(raw).decode("ascii")


def generate_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def load_private_key(pem: bytes, *, origin: str) -> Ed25519PrivateKey:
    """A PKCS#8 PEM Ed25519 private key; the error names ``origin``, never the content."""
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        raise SignatureError(f"{origin} is not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SignatureError(f"{origin} is not an Ed25519 key")
    return key


def statement(purpose: Purpose, job_id: str, body: Mapping[str, Any], *, signer: str,
              signed_at: str, nonce: str, public_key: str) -> bytes:
    """The exact bytes signed: canonical JSON of everything the command decides."""
    doc = {"v": _STATEMENT_VERSION, "purpose": purpose, "job_id": job_id, "body": dict(body),
           "signer": signer, "signed_at": signed_at, "nonce": nonce, "public_key": public_key}
    return json.dumps(doc, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8")


def sign(key: Ed25519PrivateKey, purpose: Purpose, job_id: str, body: Mapping[str, Any], *,
         signer: str, now: datetime | None = None) -> Signature:
    """Sign ``body`` for ``job_id`` as ``signer`` now, with a fresh nonce."""
    signed_at = (now or datetime.now(UTC)).astimezone(UTC).isoformat()
    nonce = secrets.token_hex(16)
    public = public_key_text(key)
    data = statement(purpose, job_id, body, signer=signer, signed_at=signed_at, nonce=nonce,
                     public_key=public)
    return Signature(signer=signer, public_key=public, signed_at=signed_at, nonce=nonce,
                     value=base64.b64encode(key.sign(data)).decode("ascii"))


def verify(signature: Signature | None, purpose: Purpose, job_id: str,
           body: Mapping[str, Any], *, allowed: Mapping[str, Iterable[str]],
           now: datetime | None = None, not_before: datetime | None = None,
           seen_nonces: Iterable[str] = ()) -> str:
    """Check ``signature`` and return the signer's normalized name, or raise SignatureError.

    ``allowed`` maps a normalized name to the public keys listed for it. Refused: no
    signature; a signer not listed or a key not listed for that signer; a signature that
    does not verify over this purpose, job and body; a nonce already seen; a time before
    ``not_before`` (the draft it judges is newer) or more than ``MAX_CLOCK_SKEW`` after
    ``now``. Deterministic given its arguments, so workflow code may call it.
    """
    if signature is None:
        raise SignatureError("the command is not signed (sign it with the key the job pinned "
                             "for a listed reviewer or operator: --key FILE, or --as NAME "
                             "with a console account's password)")
    signer = normalize_name(signature.signer)
    keys = set(allowed.get(signer, ()))
    if not keys:
        raise SignatureError(f"{signature.signer!r} is not a listed signer for job {job_id}")
    if signature.public_key not in keys:
        raise SignatureError(f"the signing key is not the one listed for {signature.signer!r}")
    try:
        raw = base64.b64decode(signature.value, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError("the signature is not valid base64") from None
    data = statement(purpose, job_id, body, signer=signature.signer,
                     signed_at=signature.signed_at, nonce=signature.nonce,
                     public_key=signature.public_key)
    try:
        parse_public_key(signature.public_key).verify(raw, data)
    except InvalidSignature:
        raise SignatureError(f"the signature does not verify for this {purpose} of job "
                             f"{job_id} (signed for something else, or altered)") from None
    if signature.nonce in set(seen_nonces):
        raise SignatureError("replayed: this signed command was already accepted")
    when = signature.signed_time()
    if not_before is not None and when < not_before:
        raise SignatureError(f"stale: signed at {signature.signed_at}, before the draft it "
                             f"judges ({not_before.isoformat()})")
    if now is not None and when > now + MAX_CLOCK_SKEW:
        raise SignatureError(f"signed at {signature.signed_at}, in the future "
                             f"(more than {MAX_CLOCK_SKEW} after {now.isoformat()})")
    return signer
