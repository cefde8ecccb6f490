"""Build the example's fixture sources deterministically, so their commits never change.

The fixture repositories are kept as plain files (``examples/fixtures/repos/<repo>/<v>/``)
and turned into git repositories here, one commit per version in order, with a fixed
author, committer, e-mail, date and message and no signing, hooks or line-ending
conversion. Git object ids depend only on those inputs, so every machine gets the same
commit shas — the ones ``examples/job.yaml`` pins and ``EXPECTED_COMMITS`` lists.

Output (default ``$PRESSROOM_FIXTURES`` or ``$PRESSROOM_HOME/fixtures``)::

    repos/<repo>/      git repository, working tree checked out at the last version,
                       tags v1, v2, ...
    docs/              document folder (read_document)
    web/               saved web pages (read_web_page)
    workspace/plan.md  the job's editable research plan
    fixtures.json      {"repos": {repo: {version: sha}}}

A rebuild that would produce the same commits leaves existing repositories untouched;
anything else is built beside the target and swapped in with a rename.

Run: ``python examples/build_fixtures.py [--target DIR]`` (prints the JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "fixtures"
AUTHOR = ("Pressroom Fixtures", "fixtures@pressroom.invalid")
PLAIN_DIRS = ("docs", "web", "workspace")

# version -> (commit date, message), per repository; dates are UTC.
HISTORY: dict[str, dict[str, tuple[str, str]]] = {
    "backoff-lib": {
        "v1": ("2024-01-15T09:00:00+00:00", "backoff-lib 0.1.0: exponential backoff"),
        "v2": ("2024-03-04T14:30:00+00:00", "backoff-lib 0.2.0: max_delay cap, full jitter"),
    },
    "httpkit": {
        "v1": ("2024-01-20T10:00:00+00:00", "httpkit 0.3.0: retry failed requests"),
        "v2": ("2024-03-11T16:45:00+00:00", "httpkit 0.4.0: retry idempotent requests only"),
    },
}

# What HISTORY and the plain files produce on any machine; examples/job.yaml pins these and
# tests/sources/test_fixtures.py asserts them. Editing a fixture file changes them: update
# both places together, on purpose.
EXPECTED_COMMITS: dict[str, dict[str, str]] = {
    "backoff-lib": {
        "v1": "39ef05da7a4df0e28b91cec90a63c1a32284e2c7",
        "v2": "ce1f6598499b765f6f2b0af3f998c69f5a53ec49",
    },
    "httpkit": {
        "v1": "08212473d761476efaf46ef5d77ac39274890335",
        "v2": "cabe63f3fb3b37f0d1f7ad25c82cb83798589153",
    },
}

_GIT_CONFIG = (
    "-c", "commit.gpgsign=false",
    "-c", "tag.gpgsign=false",
    "-c", "core.autocrlf=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "init.defaultBranch=main",
    "-c", f"user.name={AUTHOR[0]}",
    "-c", f"user.email={AUTHOR[1]}",
)


class FixtureBuildError(RuntimeError):
    """A fixture repository could not be built (git missing or failing)."""


def default_target() -> Path:
    explicit = os.environ.get("PRESSROOM_FIXTURES")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("PRESSROOM_HOME") or str(Path.home() / ".pressroom")
    return Path(home).expanduser() / "fixtures"


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo),  # no user ~/.gitconfig may change what gets committed
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "LC_ALL": "C",
        "TZ": "UTC",
    }
    if date:
        env |= {
            "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1], "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1],
            "GIT_COMMITTER_DATE": date,
        }
    try:
        done = subprocess.run(
            ["git", *_GIT_CONFIG, "-C", str(repo), *args],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )
    except FileNotFoundError as exc:
        raise FixtureBuildError("git is not installed") from exc
    if done.returncode != 0:
        raise FixtureBuildError(f"git {' '.join(args)} in {repo}: {done.stderr.strip()}")
    return done.stdout.strip()


def _copy_version(src: Path, worktree: Path) -> None:
    for child in worktree.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    for f in sorted(src.rglob("*")):
        if f.is_file():
            dest = worktree / f.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(f.read_bytes())  # content only: no exec bits, no timestamps
            dest.chmod(0o644)


def build_repo(name: str, dest: Path) -> dict[str, str]:
    """Build repository ``name`` at ``dest`` (must not exist); return version -> sha."""
    versions = HISTORY[name]
    dest.mkdir(parents=True)
    _git(dest, "init", "-q")
    shas: dict[str, str] = {}
    for version in sorted(versions):
        date, message = versions[version]
        _copy_version(SOURCE / "repos" / name / version, dest)
        _git(dest, "add", "-A")
        _git(dest, "commit", "-q", "--allow-empty", "-m", message, date=date)
        _git(dest, "tag", version)  # lightweight: no tagger date to pin
        shas[version] = _git(dest, "rev-parse", "HEAD")
    return shas


def _existing_shas(repo: Path, versions: list[str]) -> dict[str, str] | None:
    if not (repo / ".git").is_dir():
        return None
    try:
        return {v: _git(repo, "rev-parse", f"refs/tags/{v}^{{commit}}") for v in versions}
    except FixtureBuildError:
        return None


def _swap_in(new: Path, target: Path) -> None:
    old = target.with_name(f".old-{target.name}-{os.getpid()}")
    if target.exists():
        target.rename(old)
    new.rename(target)
    if old.exists():
        shutil.rmtree(old)


def build_fixtures(target: Path | None = None, *, verify: bool = True) -> dict[str, object]:
    """Build every fixture under ``target``; return the ``fixtures.json`` content.

    With ``verify`` (the default) a build whose commits differ from ``EXPECTED_COMMITS``
    fails with ``FixtureBuildError`` naming them: the example job pins those shas, and a
    silently different fixture would only surface later as a missing commit.
    """
    target = (target or default_target()).resolve()
    (target / "repos").mkdir(parents=True, exist_ok=True)
    repos: dict[str, dict[str, str]] = {}
    for name in sorted(HISTORY):
        final = target / "repos" / name
        staging = target / "repos" / f".build-{name}-{os.getpid()}"
        if staging.exists():
            shutil.rmtree(staging)
        shas = build_repo(name, staging)
        if _existing_shas(final, sorted(shas)) == shas:
            shutil.rmtree(staging)
        else:
            _swap_in(staging, final)
        repos[name] = shas
    for plain in PLAIN_DIRS:
        staging = target / f".build-{plain}-{os.getpid()}"
        if staging.exists():
            shutil.rmtree(staging)
        shutil.copytree(SOURCE / plain, staging)
        _swap_in(staging, target / plain)
    if verify and repos != EXPECTED_COMMITS:
        changed = sorted(
            f"{name} {v}: {sha}" for name, vs in repos.items() for v, sha in vs.items()
            if EXPECTED_COMMITS.get(name, {}).get(v) != sha
        )
        raise FixtureBuildError(
            "fixture commits differ from EXPECTED_COMMITS (were fixture files edited? then "
            "update EXPECTED_COMMITS and examples/job.yaml together): " + "; ".join(changed)
        )
    result: dict[str, object] = {"fixtures_dir": str(target), "repos": repos}
    (target / "fixtures.json").write_text(json.dumps({"repos": repos}, indent=2, sort_keys=True))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--target", type=Path, default=None, help="output directory")
    args = parser.parse_args(argv)
    try:
        result = build_fixtures(args.target)
    except FixtureBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
