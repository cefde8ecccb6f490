"""Reviewer accounts of the review console on real files: passwords, encrypted signing keys,
file modes and links, one-time sign-in tokens, and ``pressroom reviewer add`` through the
real CLI (its own process, password on stdin)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from cryptography.hazmat.primitives import serialization

from contracts.errors import PathRefused
from contracts.path_safety import PathRoots, locate
from contracts.signing import parse_public_key, sign, verify
from settings import Settings
from webconsole.accounts import (
    AccountError,
    AccountExists,
    AccountStorageError,
    InvalidAccountName,
    ReviewerAccounts,
    UnknownAccount,
    WeakPassword,
    WrongPassword,
    register_public_key,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"
#: argon2 at its cheapest: the tests check behaviour, not cost
CHEAP = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return Settings(home=tmp_path / "home").console_accounts_dir


@pytest.fixture
def accounts(folder: Path) -> ReviewerAccounts:
    return ReviewerAccounts(folder, hasher=CHEAP)


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_add_and_authenticate(accounts: ReviewerAccounts) -> None:
    public = accounts.add("Alice", PASSWORD)
    parse_public_key(public)
    assert accounts.authenticate("Alice", PASSWORD) == "alice"
    assert accounts.authenticate("ALICE", PASSWORD) == "alice"  # normalized names
    assert accounts.authenticate("alice", PASSWORD + "!") is None
    assert accounts.authenticate("bob", PASSWORD) is None
    assert accounts.authenticate("ops/alice", PASSWORD) is None  # not even a valid name
    assert accounts.exists("alice") and not accounts.exists("bob")
    assert accounts.public_key("alice") == public
    assert accounts.names() == ["alice"]
    with pytest.raises(UnknownAccount):
        accounts.public_key("bob")


def test_an_empty_folder_has_no_accounts(tmp_path: Path) -> None:
    accounts = ReviewerAccounts(tmp_path / "nowhere", hasher=CHEAP)
    assert accounts.names() == [] and not accounts.exists("alice")
    assert accounts.authenticate("alice", PASSWORD) is None
    assert not (tmp_path / "nowhere").exists()  # reading creates nothing


def test_duplicates_short_passwords_and_bad_names_are_refused(
        accounts: ReviewerAccounts) -> None:
    first = accounts.add("alice", PASSWORD)
    with pytest.raises(AccountExists):
        accounts.add("Alice", "another password!")
    assert accounts.authenticate("alice", PASSWORD) == "alice"
    with pytest.raises(WeakPassword, match="12 characters"):
        accounts.add("bob", "short")
    for bad in ("", "  ", "ops/alice", "a\x00b", "x" * 201, " alice"):
        with pytest.raises(InvalidAccountName):
            accounts.add(bad, PASSWORD)
    # a different name that maps to the same file is not an account of it
    accounts.add("a b", PASSWORD)
    with pytest.raises(AccountExists, match="same file name"):
        accounts.add("a_b", PASSWORD)
    assert not accounts.exists("a_b") and accounts.authenticate("a_b", PASSWORD) is None
    # replace: a new password and a new key
    second = accounts.add("alice", "a brand new password", replace=True)
    assert second != first
    assert accounts.authenticate("alice", PASSWORD) is None
    assert accounts.authenticate("alice", "a brand new password") == "alice"


def test_errors_never_carry_the_password_or_the_key(accounts: ReviewerAccounts,
                                                     folder: Path) -> None:
    accounts.add("alice", PASSWORD)
    record = (folder / "alice.json").read_text()
    secret_bits = [PASSWORD, "wrong password here"]
    for attempt in (lambda: accounts.signing_key("alice", "wrong password here"),
                    lambda: accounts.add("alice", PASSWORD),
                    lambda: accounts.add("bob", "tiny")):
        with pytest.raises(AccountError) as caught:
            attempt()
        message = str(caught.value)
        assert not any(bit in message for bit in secret_bits)
        assert "argon2" not in message and "PRIVATE KEY" not in message
        assert not any(line and line in message for line in record.splitlines()[1:])


def test_files_are_private_and_hold_no_plain_secret(accounts: ReviewerAccounts,
                                                    folder: Path) -> None:
    old = os.umask(0)  # whatever the umask, the modes are 0700 / 0600
    try:
        accounts.add("alice", PASSWORD)
        accounts.one_time_token("alice")
    finally:
        os.umask(old)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "tokens").stat().st_mode & 0o777 == 0o700
    for path in folder.rglob("*"):
        if path.is_file():
            assert path.stat().st_mode & 0o777 == 0o600, path
    assert sorted(p.name for p in folder.iterdir()) == ["alice.json", "tokens"]  # no temp
    data = _all_bytes(folder)
    assert PASSWORD.encode() not in data
    assert b"BEGIN ENCRYPTED PRIVATE KEY" in data and b"BEGIN PRIVATE KEY" not in data
    # a folder left open by someone is closed again before use
    folder.chmod(0o755)
    accounts.names()
    assert folder.stat().st_mode & 0o777 == 0o700


def test_a_file_others_can_read_is_refused(accounts: ReviewerAccounts, folder: Path) -> None:
    accounts.add("alice", PASSWORD)
    (folder / "alice.json").chmod(0o644)
    with pytest.raises(AccountStorageError, match="readable by others"):
        accounts.authenticate("alice", PASSWORD)


def test_symbolic_links_are_refused_never_followed(tmp_path: Path, folder: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    folder.parent.mkdir(parents=True)
    folder.symlink_to(elsewhere)
    with pytest.raises(AccountStorageError):
        ReviewerAccounts(folder, hasher=CHEAP).add("alice", PASSWORD)
    assert list(elsewhere.iterdir()) == []
    folder.unlink()

    accounts = ReviewerAccounts(folder, hasher=CHEAP)
    accounts.add("alice", PASSWORD)
    target = elsewhere / "target.json"
    target.write_text("untouched")
    target.chmod(0o600)
    (folder / "bob.json").symlink_to(target)
    with pytest.raises(AccountStorageError, match="symbolic link"):
        accounts.add("bob", PASSWORD, replace=True)
    with pytest.raises(AccountStorageError):
        accounts.authenticate("bob", PASSWORD)
    assert target.read_text() == "untouched"
    # a link in the account's place is refused even for an existing account
    (folder / "alice.json").rename(elsewhere / "alice.json")
    (folder / "alice.json").symlink_to(elsewhere / "alice.json")
    with pytest.raises(AccountStorageError):
        accounts.signing_key("alice", PASSWORD)
    # the registry entry too
    reviewers = tmp_path / "reviewers"
    reviewers.mkdir()
    (reviewers / "carol.pub").symlink_to(target)
    with pytest.raises(AccountStorageError):
        register_public_key(reviewers, "carol", "ed25519:x", replace=True)
    assert target.read_text() == "untouched"


def test_the_signing_key_opens_only_with_the_password(accounts: ReviewerAccounts,
                                                      folder: Path, tmp_path: Path) -> None:
    public = accounts.add("Alice", PASSWORD)
    with pytest.raises(WrongPassword):
        accounts.signing_key("alice", "not the password")
    with pytest.raises(UnknownAccount):
        accounts.signing_key("bob", PASSWORD)
    # the stored PEM's passphrase is stretched with argon2, not the bare password
    pem = (folder / "alice.json").read_text()
    start = pem.index("-----BEGIN")
    block = pem[start:pem.index("-----", pem.index("-----END") + 8) + 5]
    with pytest.raises((ValueError, TypeError)):
        serialization.load_pem_private_key(block.encode().decode("unicode_escape").encode(),
                                           password=PASSWORD.encode())
    key = accounts.signing_key("ALICE", PASSWORD)
    registered = register_public_key(tmp_path / "reviewers", "Alice", public)
    assert registered == tmp_path / "reviewers" / "alice.pub"
    assert registered.read_text().strip() == public
    assert registered.stat().st_mode & 0o777 == 0o644
    body = {"draft": 3, "decision": "approve"}
    signature = sign(key, "review", "job-1", body, signer="Alice")
    assert verify(signature, "review", "job-1", body,
                  allowed={"alice": [registered.read_text().strip()]}) == "alice"
    with pytest.raises(AccountExists):
        register_public_key(tmp_path / "reviewers", "alice", public)


def test_an_old_hash_is_rehashed_at_sign_in(folder: Path) -> None:
    ReviewerAccounts(folder, hasher=CHEAP).add("alice", PASSWORD)
    before = (folder / "alice.json").read_text()
    stronger = ReviewerAccounts(folder, hasher=PasswordHasher(time_cost=2, memory_cost=16,
                                                              parallelism=1))
    assert stronger.authenticate("alice", PASSWORD) == "alice"
    after = (folder / "alice.json").read_text()
    assert "m=8,t=1" in before and "m=16,t=2" in after
    assert stronger.authenticate("alice", PASSWORD) == "alice"
    stronger.signing_key("alice", PASSWORD)  # the key's own derivation is unchanged


def test_one_time_tokens_are_single_use_and_expire(folder: Path) -> None:
    clock = Clock()
    accounts = ReviewerAccounts(folder, hasher=CHEAP, clock=clock)
    accounts.add("Alice", PASSWORD)
    token = accounts.one_time_token("alice", ttl_s=600)
    assert token.encode() not in _all_bytes(folder)  # only its hash is stored
    assert accounts.redeem_token(token) == "alice"
    assert accounts.redeem_token(token) is None  # single use
    assert list((folder / "tokens").iterdir()) == []

    late = accounts.one_time_token("alice", ttl_s=600)
    clock.now += 601
    assert accounts.redeem_token(late) is None
    assert list((folder / "tokens").iterdir()) == []  # an expired one is removed too

    for junk in ("", "x", "../../etc/passwd", "a" * 500, token + "x"):
        assert accounts.redeem_token(junk) is None
    with pytest.raises(UnknownAccount):
        accounts.one_time_token("bob")
    # a token outlives nothing: replacing the account's name mapping invalidates it
    gone = accounts.one_time_token("alice")
    (folder / "alice.json").unlink()
    assert accounts.redeem_token(gone) is None


def test_accounts_are_pressroom_private_state(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = Settings(home=home)
    accounts = ReviewerAccounts(settings.console_accounts_dir, hasher=CHEAP)
    accounts.add("alice", PASSWORD)
    account = settings.console_accounts_dir / "alice.json"
    for roots in (PathRoots.of(settings), PathRoots.default(settings.locations)):
        for path in (account, settings.console_accounts_dir, home / "console"):
            with pytest.raises(PathRefused, match="Pressroom's own state"):
                locate(str(path), roots, "source", what="document")


async def _cli(home: Path, *args: str, stdin: str = "") -> tuple[int, str, str]:
    env = {**os.environ, "PRESSROOM_HOME": str(home), "COLUMNS": "200"}
    env.pop("PRESSROOM_DEBUG", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO_ROOT / "pressroom.py"), *args, env=env, cwd=REPO_ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _one_line_error(rc: int, err: str, needle: str) -> None:
    assert rc == 1 and "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines and lines[0].startswith("error:") and needle in " ".join(lines)


async def test_cli_reviewer_add_creates_the_account_and_registers_its_key(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = Settings(home=home)
    rc, out, err = await _cli(home, "reviewer", "add", "Alice", "--password-stdin",
                              stdin=PASSWORD + "\n")
    assert rc == 0, err
    public = out.strip().splitlines()[-1]
    parse_public_key(public)
    registered = settings.reviewers_dir / "alice.pub"
    assert f"registered {registered}" in out
    assert registered.read_text().strip() == public  # what `pressroom run` pins
    assert PASSWORD not in out + err
    accounts = ReviewerAccounts(settings.console_accounts_dir)
    assert accounts.authenticate("alice", PASSWORD) == "alice"
    assert accounts.public_key("alice") == public
    key = accounts.signing_key("alice", PASSWORD)
    assert verify(sign(key, "review", "job-1", {}, signer="alice"), "review", "job-1", {},
                  allowed={"alice": [public]}) == "alice"

    rc, _out, err = await _cli(home, "reviewer", "add", "alice", "--password-stdin",
                               stdin="another long password\n")
    _one_line_error(rc, err, "already exists")
    rc, _out, err = await _cli(home, "reviewer", "add", "bob", "--password-stdin",
                               stdin="short\n")
    _one_line_error(rc, err, "at least 12 characters")
    assert not (settings.reviewers_dir / "bob.pub").exists()
    # a name `reviewer keygen --register` already registered is not silently re-keyed
    rc, _out, err = await _cli(home, "reviewer", "keygen", "carol", "--register")
    assert rc == 0, err
    rc, _out, err = await _cli(home, "reviewer", "add", "carol", "--password-stdin",
                               stdin=PASSWORD + "\n")
    _one_line_error(rc, err, "already registers a key")
    assert not ReviewerAccounts(settings.console_accounts_dir).exists("carol")
    rc, out, err = await _cli(home, "reviewer", "add", "carol", "--password-stdin",
                              "--replace", stdin=PASSWORD + "\n")
    assert rc == 0, err
    assert (settings.reviewers_dir / "carol.pub").read_text().strip() == \
        out.strip().splitlines()[-1]
