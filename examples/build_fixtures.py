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
    repos/cpython-stdlib/
                       part of this interpreter's standard library (``STDLIB_FILES``,
                       under ``Lib/`` as in the CPython tree), one commit
    asyncio_job.yaml   the asyncio example job, rendered from ``examples/asyncio_job.yaml``
                       with that commit pinned
    repos/argon2-cffi/ the installed ``argon2`` package's Python files (``argon2-cffi``, a
                       dependency of the review console), under ``src/argon2/``, one commit
    package-docs/argon2-cffi/README.md
                       that distribution's own long description (its README), as a document
    fixtures.json      {"repos": {repo: {version: sha}},
                        "stdlib": {"python": version, "commit": sha, "files": n, ...},
                        "package": {"name": ..., "version": ..., "commit": sha, ...}}

The standard-library corpus is source code no one here wrote, present wherever Python is,
copied byte for byte and committed the same fixed way. Its sha depends on the exact files
(patch releases and distribution patches differ), so it cannot be pinned in a committed
file: the build records it in ``fixtures.json`` and renders the ready-to-run job with it.

The package corpus is the same idea for a third-party library: the installed
``argon2-cffi``'s pure-Python part, copied and committed the same way (its sha depends on
the installed version, recorded in ``fixtures.json``). ``pressroom eval agent``
(``evals/agent_lab``) asks its questions over both corpora.

A rebuild that would produce the same commits leaves existing repositories untouched;
anything else is built beside the target and swapped in with a rename.

Run: ``python examples/build_fixtures.py [--target DIR]`` (prints the JSON).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
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

# The standard-library corpus: these files of the running interpreter's stdlib, copied byte
# for byte to Lib/<path> and committed once. A fixed list (present in 3.11 to 3.13), not a
# glob: a file added by a later Python must not silently join the corpus.
STDLIB_REPO = "cpython-stdlib"
STDLIB_ROOT = "Lib"
STDLIB_DATE = "2024-01-01T00:00:00+00:00"
_ASYNCIO_MODULES = (
    "__init__", "__main__", "base_events", "base_futures", "base_subprocess", "base_tasks",
    "constants", "coroutines", "events", "exceptions", "format_helpers", "futures", "locks",
    "log", "mixins", "proactor_events", "protocols", "queues", "runners", "selector_events",
    "sslproto", "staggered", "streams", "subprocess", "taskgroups", "tasks", "threads",
    "timeouts", "transports", "trsock", "unix_events", "windows_events", "windows_utils",
)
STDLIB_FILES: tuple[str, ...] = (
    *(f"asyncio/{m}.py" for m in _ASYNCIO_MODULES),
    "concurrent/__init__.py",
    *(f"concurrent/futures/{m}.py" for m in ("__init__", "_base", "process", "thread")),
    "queue.py",
    "selectors.py",
)
# The asyncio job template and where its rendering goes (relative to the fixtures target).
STDLIB_JOB_TEMPLATE = HERE / "asyncio_job.yaml"
STDLIB_JOB = "asyncio_job.yaml"
# Build-time fields of the template: ``{{ name }}``. They look unlike the run-time
# ``${PRESSROOM_FIXTURES}`` placeholders on purpose, and an unrendered ``"{{ stdlib_commit }}"``
# is not a single revision, so the template itself fails validation instead of running.
_TEMPLATE_FIELD = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")

# The package corpus: a third-party, pure-Python library Pressroom already depends on,
# copied from wherever it is installed (``importlib``), so no one here wrote a line of it.
PACKAGE_DIST = "argon2-cffi"
PACKAGE_MODULE = "argon2"
PACKAGE_REPO = "argon2-cffi"
PACKAGE_ROOT = "src/argon2"
PACKAGE_DOCS = "package-docs"

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


def stdlib_dir() -> Path:
    """The running interpreter's standard library (the base one, also inside a venv)."""
    return Path(sysconfig.get_paths()["stdlib"])


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def build_stdlib_repo(dest: Path, stdlib: Path | None = None) -> str:
    """Commit ``STDLIB_FILES`` of ``stdlib`` (default: this interpreter's) under ``Lib/`` in a
    new repository at ``dest`` (must not exist); return the commit sha.

    The committed tree is checked against the files' own blob ids, so no filter, attribute
    or line-ending setting can have changed a byte on the way in.
    """
    src = stdlib or stdlib_dir()
    missing = [f for f in STDLIB_FILES if not (src / f).is_file()]
    if missing:
        raise FixtureBuildError(f"the standard library at {src} lacks {', '.join(missing)}")
    contents = {f"{STDLIB_ROOT}/{rel}": (src / rel).read_bytes() for rel in STDLIB_FILES}
    dest.mkdir(parents=True)
    _git(dest, "init", "-q")
    for rel, data in contents.items():
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        out.chmod(0o644)
    _git(dest, "add", "-A", "--force", "--", STDLIB_ROOT)
    version = platform.python_version()
    message = (
        f"CPython {version} standard library: asyncio, concurrent.futures, queue, selectors\n\n"
        f"{len(contents)} files copied byte for byte from the interpreter's Lib/ by "
        "examples/build_fixtures.py."
    )
    _git(dest, "commit", "-q", "-m", message, date=STDLIB_DATE)
    listed = _git(dest, "ls-tree", "-r", "--full-tree", "HEAD")
    tree = {}
    for line in listed.splitlines():
        meta, path = line.split("\t", 1)
        mode, _kind, blob = meta.split()
        tree[path] = (mode, blob)
    expected = {path: ("100644", _blob_id(data)) for path, data in contents.items()}
    if tree != expected:
        differ = sorted(set(tree.items()) ^ set(expected.items()))
        raise FixtureBuildError(
            f"{dest}: the commit does not hold the standard-library files byte for byte: "
            + ", ".join(sorted({path for path, _ in differ}))
        )
    return _git(dest, "rev-parse", "HEAD")


def render_template(text: str, values: Mapping[str, str]) -> str:
    """Fill the template's ``{{ name }}`` fields; an unknown field is a ``FixtureBuildError``
    (``${...}`` run-time placeholders are left for the worker)."""

    def _sub(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise FixtureBuildError(
                f"unknown template field {match.group(0)}; known: {', '.join(sorted(values))}"
            )
        return values[key]

    return _TEMPLATE_FIELD.sub(_sub, text)


def _write_if_changed(path: Path, text: str) -> None:
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def build_stdlib(target: Path) -> dict[str, object]:
    """Build ``repos/cpython-stdlib`` under ``target`` (kept when unchanged), render the
    asyncio job with its commit, and return the ``stdlib`` entry of ``fixtures.json``."""
    final = target / "repos" / STDLIB_REPO
    staging = target / "repos" / f".build-{STDLIB_REPO}-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    sha = build_stdlib_repo(staging)
    if _existing_head(final) == sha:
        shutil.rmtree(staging)
    else:
        _swap_in(staging, final)
    version = platform.python_version()
    job = render_template(
        STDLIB_JOB_TEMPLATE.read_text(encoding="utf-8"),
        {"stdlib_commit": sha, "python_version": version},
    )
    _write_if_changed(target / STDLIB_JOB, job)
    return {
        "python": version,
        "commit": sha,
        "files": len(STDLIB_FILES),
        "repo": f"repos/{STDLIB_REPO}",
        "job": STDLIB_JOB,
    }


def package_files() -> dict[str, bytes]:
    """The installed ``PACKAGE_MODULE``'s ``*.py`` files by path under ``PACKAGE_ROOT``."""
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise FixtureBuildError(f"the {PACKAGE_DIST} package is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return {f"{PACKAGE_ROOT}/{f.relative_to(folder).as_posix()}": f.read_bytes()
            for f in sorted(folder.rglob("*.py")) if "__pycache__" not in f.parts}


def package_readme() -> str:
    """The distribution's long description (its README), from its installed metadata."""
    from importlib.metadata import metadata

    body = metadata(PACKAGE_DIST).get_payload()  # type: ignore[attr-defined]
    return str(body or "").strip() + "\n"


def build_package(target: Path) -> dict[str, object]:
    """Build ``repos/argon2-cffi`` (kept when unchanged) and its README document folder
    under ``target``; return the ``package`` entry of ``fixtures.json``."""
    from importlib.metadata import version as dist_version

    contents = package_files()
    final = target / "repos" / PACKAGE_REPO
    staging = target / "repos" / f".build-{PACKAGE_REPO}-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    _git(staging, "init", "-q")
    for rel, data in contents.items():
        out = staging / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        out.chmod(0o644)
    _git(staging, "add", "-A", "--force", "--", PACKAGE_ROOT)
    version = dist_version(PACKAGE_DIST)
    _git(staging, "commit", "-q", "-m",
         f"{PACKAGE_DIST} {version}: {len(contents)} files copied byte for byte from the "
         "installed package by examples/build_fixtures.py", date=STDLIB_DATE)
    sha = _git(staging, "rev-parse", "HEAD")
    if _existing_head(final) == sha:
        shutil.rmtree(staging)
    else:
        _swap_in(staging, final)
    docs = target / PACKAGE_DOCS / PACKAGE_DIST
    docs.mkdir(parents=True, exist_ok=True)
    _write_if_changed(docs / "README.md", package_readme())
    return {"name": PACKAGE_DIST, "version": version, "commit": sha, "files": len(contents),
            "repo": f"repos/{PACKAGE_REPO}", "docs": f"{PACKAGE_DOCS}/{PACKAGE_DIST}"}


def _existing_head(repo: Path) -> str | None:
    if not (repo / ".git").is_dir():
        return None
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except FixtureBuildError:
        return None


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
    stdlib = build_stdlib(target)
    package = build_package(target)
    result: dict[str, object] = {"fixtures_dir": str(target), "repos": repos, "stdlib": stdlib,
                                 "package": package}
    (target / "fixtures.json").write_text(
        json.dumps({"repos": repos, "stdlib": stdlib, "package": package}, indent=2,
                   sort_keys=True)
    )
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
