"""The operator's reviewer registry has one module (``contracts.reviewer_registry``), and
every reader and writer goes through it with the same safety.

A symbolic link in a registry entry's place is refused by each reader — the pinning at
``pressroom run`` / ``check`` (``cli.reviewer_keys``), the worker's registered-reviewers-only
check where a spec is stored (``activities.reviewer_registry``) and its check at publish
(``activities.publish.check_registry``) — and by each writer (``keygen --register``, the
console's ``register_public_key``); a FIFO or an oversized entry is refused without hanging
or reading it whole; the worker reads the registry the settings name, not one rebuilt from
the environment; and no other module builds an entry's path itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from activities.publish import check_registry
from activities.reviewer_registry import check_spec_reviewers, registered_key
from activities.runtime import ActivityRuntime
from cli.reviewer_keys import ReviewerKeyError, check_reviewers, keygen, pin_reviewers
from contracts import reviewer_registry
from contracts.errors import JobError, JobSpecError, PublishRefused, ReviewerNotRegistered
from contracts.job_spec import JobSpec, ReviewerSpec
from contracts.signing import public_key_text
from settings import Settings
from tests.workflows.jobkit import job_dict, reviewer_key
from webconsole.accounts import AccountStorageError, register_public_key

ROOT = Path(__file__).resolve().parents[1]
ALICE = public_key_text(reviewer_key("alice"))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({"PRESSROOM_HOME": str(tmp_path / "home")})


@pytest.fixture
def linked(settings: Settings, tmp_path: Path) -> Path:
    """alice's registry entry is a symbolic link to a file holding her right key."""
    target = tmp_path / "elsewhere.pub"
    target.write_text(ALICE + "\n")
    settings.reviewers_dir.mkdir(parents=True)
    (settings.reviewers_dir / "alice.pub").symlink_to(target)
    return target


def _spec(tmp_path: Path, *, pinned: bool) -> JobSpec:
    spec = JobSpec.model_validate(job_dict(tmp_path, tmp_path / "docs"))
    alice = ReviewerSpec(name="alice", public_key=ALICE if pinned else None)
    review = spec.review.model_copy(update={"reviewers": [alice], "operators": []})
    return spec.model_copy(update={"review": review})


def _readers(settings: Settings, tmp_path: Path) -> dict[str, tuple[Callable[[], object],
                                                                   type[Exception]]]:
    registry = settings.reviewers_dir
    only = settings.model_copy(update={"registered_reviewers_only": True})
    return {
        "contracts.reviewer_registry.read_entry": (
            lambda: reviewer_registry.read_entry(registry, "alice"),
            reviewer_registry.RegistryError),
        "activities.reviewer_registry.registered_key": (
            lambda: registered_key(registry, "alice"), ReviewerNotRegistered),
        "activities.reviewer_registry.check_spec_reviewers": (
            lambda: check_spec_reviewers(_spec(tmp_path, pinned=True), registry),
            ReviewerNotRegistered),
        "activities.publish.check_registry": (
            lambda: check_registry(registry, "alice", ALICE), PublishRefused),
        "activities.publish.check_registry(required)": (
            lambda: check_registry(registry, "alice", ALICE, required=True), PublishRefused),
        "cli.reviewer_keys.pin_reviewers": (
            lambda: pin_reviewers(_spec(tmp_path, pinned=False), settings), JobSpecError),
        "cli.reviewer_keys.check_reviewers": (
            lambda: check_reviewers(_spec(tmp_path, pinned=True), only), JobSpecError),
    }


READERS = ["contracts.reviewer_registry.read_entry",
           "activities.reviewer_registry.registered_key",
           "activities.reviewer_registry.check_spec_reviewers",
           "activities.publish.check_registry",
           "activities.publish.check_registry(required)",
           "cli.reviewer_keys.pin_reviewers",
           "cli.reviewer_keys.check_reviewers"]


@pytest.mark.parametrize("reader", READERS)
def test_a_symlinked_entry_is_refused_by_every_reader(reader: str, settings: Settings,
                                                       linked: Path, tmp_path: Path) -> None:
    call, error = _readers(settings, tmp_path)[reader]
    with pytest.raises(error, match="symbolic link") as caught:
        call()
    assert ALICE not in str(caught.value)  # the file is named, never its content


@pytest.mark.parametrize("reader", READERS)
def test_a_regular_entry_is_read_by_every_reader(reader: str, settings: Settings,
                                                  tmp_path: Path) -> None:
    """The same readers accept alice's entry as a plain file (the refusal above is the
    link's, not a reader that refuses everything)."""
    reviewer_registry.write_entry(settings.reviewers_dir, "alice", ALICE)
    call, _error = _readers(settings, tmp_path)[reader]
    call()
    assert reviewer_registry.read_entry(settings.reviewers_dir, "Alice") == ALICE


def test_writers_refuse_a_symlinked_entry(settings: Settings, linked: Path) -> None:
    with pytest.raises(reviewer_registry.RegistryError, match="symbolic link"):
        reviewer_registry.write_entry(settings.reviewers_dir, "alice", ALICE, replace=True)
    with pytest.raises(AccountStorageError, match="symbolic link"):
        register_public_key(settings.reviewers_dir, "alice", ALICE, replace=True)
    with pytest.raises(ReviewerKeyError):
        keygen(settings, "alice", register=True)
    assert linked.read_text() == ALICE + "\n"


def test_keygen_registers_through_the_registry(settings: Settings) -> None:
    made = keygen(settings, "carol", register=True)
    assert made.registered == reviewer_registry.entry_path(settings.reviewers_dir, "carol")
    assert reviewer_registry.read_entry(settings.reviewers_dir, "carol") == made.public_key
    assert made.registered.stat().st_mode & 0o777 == 0o644
    assert reviewer_registry.names(settings.reviewers_dir) == ["carol"]


def test_a_fifo_or_an_oversized_entry_is_refused(settings: Settings) -> None:
    registry = settings.reviewers_dir
    registry.mkdir(parents=True)
    os.mkfifo(registry / "alice.pub")  # opened non-blocking: no writer, no hang
    with pytest.raises(reviewer_registry.RegistryError, match="not a regular file"):
        reviewer_registry.read_entry(registry, "alice")
    (registry / "bob.pub").write_text("x" * 10_000)
    with pytest.raises(reviewer_registry.RegistryError, match="too large"):
        reviewer_registry.read_entry(registry, "bob")
    assert reviewer_registry.read_entry(registry, "nobody") is None
    assert isinstance(reviewer_registry.RegistryError("x"), JobError)


def test_the_worker_reads_the_registry_the_settings_name(settings: Settings,
                                                         tmp_path: Path) -> None:
    elsewhere = tmp_path / "operator-registry"
    runtime = ActivityRuntime("sqlite+aiosqlite:///unused.db", locations=settings.locations,
                              reviewers_dir=elsewhere)
    assert runtime.reviewers_dir == elsewhere
    # without one (tests, helpers), the same folder Settings names for that home
    default = ActivityRuntime("sqlite+aiosqlite:///unused.db", locations=settings.locations)
    assert default.reviewers_dir == settings.reviewers_dir


def test_no_module_but_the_registry_builds_an_entry_path() -> None:
    """An entry's path (``<key_file_name(name)>.pub``) is spelt in one module only."""
    pattern = re.compile(r"""f["'][^"'\n]*\}\.pub["']""")
    found = []
    for folder in ("activities", "artifacts", "cli", "client", "context", "contracts",
                   "presentation", "webconsole", "workflows"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if pattern.search(path.read_text(encoding="utf-8")):
                found.append(str(path.relative_to(ROOT)))
    for script in ("pressroom.py", "worker.py", "settings.py"):
        if pattern.search((ROOT / script).read_text(encoding="utf-8")):
            found.append(script)
    assert found == []
