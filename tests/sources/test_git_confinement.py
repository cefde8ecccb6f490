"""Git repositories are read only inside the folder a job names (SECURITY.md §3).

Real repositories built in temporary folders with the real ``git``, read through the real
submit/spec check (``check_source`` / ``check_job_paths``), the research tools
(``run_source_tool``: ``list``, ``search``, ``read``) and ``pressroom run``'s ref
resolution (``workflows.pins.resolve_ref``). Each attack gave the attacker the other
folder's files before ``contracts.git_safety``: a folder inside a larger repository, a
``.git`` file or worktree pointing out of the roots, alternates out of the roots, the
worker's own ``GIT_DIR`` / ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` and a replace ref.
"""

from __future__ import annotations

import ast
import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from activities.research_tools import ToolRejected, run_source_tool
from contracts.errors import PathRefused, RepositoryRefused
from contracts.git_safety import SAFE_OPTIONS
from contracts.path_safety import PathRoots, check_source
from contracts.source_specs import GitSourceSpec
from workflows.errors import UnresolvedRef
from workflows.pins import resolve_ref

REPO_ROOT = Path(__file__).resolve().parents[2]
#: what tenant B's file holds; it must appear in nothing tenant A's job gets
SECRET_LINE = "tenant B salary table: 91000"
LINES = {"start_line": 1, "end_line": 5}
_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid",
             "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t.invalid"}


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args],
                          env={**env, **_IDENTITY}, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit_all(repo: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "files")
    return git(repo, "rev-parse", "HEAD")


def new_repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return commit_all(path, files)


def roots(*folders: Path) -> PathRoots:
    return PathRoots(sources=folders, publish=folders)


def locations(tmp_path: Path) -> dict[str, str]:
    return {"PRESSROOM_HOME": str(tmp_path / "home"), "PRESSROOM_FIXTURES": str(tmp_path)}


def spec(repo: Path, commit: str) -> GitSourceSpec:
    return GitSourceSpec(name="notes", repo=str(repo), commit=commit)


async def tool(tmp_path: Path, source: GitSourceSpec, root: PathRoots, name: str,
               **arguments: Any) -> dict[str, Any]:
    return await run_source_tool(name, {"source": "notes", **arguments}, [source],
                                 locations(tmp_path), roots=root)


@pytest.fixture
def outer(tmp_path: Path) -> tuple[Path, str]:
    """``outer`` is one repository holding both tenants' folders; tenant A's root is
    ``outer/tenantA`` and its job names ``outer/tenantA/notes``, which is no repository."""
    sha = new_repo(tmp_path / "outer", {"tenantA/notes/plan.md": "tenant A salary plan\n",
                                        "tenantB/payroll.md": SECRET_LINE + "\n"})
    return tmp_path / "outer", sha


async def test_a_folder_inside_a_larger_repository_is_not_a_repository(
        tmp_path: Path, outer: tuple[Path, str]) -> None:
    """Before: the check passed, git walked up to ``outer``, ``list`` showed ``tenantB/``,
    ``read`` returned its file, ``search`` quoted it and ``ref: main`` resolved to
    ``outer``'s commit."""
    repo, sha = outer
    tenant_a = roots(repo / "tenantA")
    source = spec(repo / "tenantA" / "notes", sha)
    with pytest.raises(RepositoryRefused, match=r"source 'notes' repository .*/tenantA/notes "
                                                 r"is not a git repository of its own"):
        check_source(source, tenant_a, locations(tmp_path))
    for name, arguments in (("list", {}), ("read", {"path": "tenantB/payroll.md", **LINES}),
                            ("search", {"query": "salary"})):
        with pytest.raises(ToolRejected) as caught:
            await tool(tmp_path, source, tenant_a, name, **arguments)
        assert caught.value.kind == "source_unavailable", caught.value
        assert "tenantB" not in str(caught.value) and "91000" not in str(caught.value)
    with pytest.raises(ToolRejected, match="not a git repository"):
        await tool(tmp_path, source, tenant_a, "search", query="salary")
    with pytest.raises(UnresolvedRef, match="not a git repository"):
        await resolve_ref(str(repo / "tenantA" / "notes"), "main", name="notes")
    # the repository's own folder, inside the roots, is still read
    whole = await tool(tmp_path, spec(repo, sha), roots(repo), "list")
    assert whole["entries"] == ["tenantA/", "tenantB/"]


@pytest.mark.parametrize("how", ["gitdir-file", "worktree"])
async def test_a_git_file_pointing_out_of_the_folder_is_refused(tmp_path: Path,
                                                                how: str) -> None:
    """A ``.git`` file (``gitdir:`` to a repository outside the roots) and a worktree of
    such a repository. Before: both were read as the outside repository; the refusal
    never quotes the ``.git`` file's target."""
    outside = tmp_path / "outside"
    sha = new_repo(outside, {"payroll.md": SECRET_LINE + "\n"})
    root = tmp_path / "root"
    root.mkdir()
    folder = root / "proj"
    if how == "gitdir-file":
        folder.mkdir()
        (folder / ".git").write_text(f"gitdir: {outside / '.git'}\n", encoding="utf-8")
    else:
        git(outside, "worktree", "add", "-q", "--detach", str(folder), sha)
    source = spec(folder, sha)
    with pytest.raises(RepositoryRefused, match="lies outside the repository folder") as got:
        check_source(source, roots(root), locations(tmp_path))
    assert str(outside) not in str(got.value)
    for name, arguments in (("list", {}), ("read", {"path": "payroll.md", **LINES}),
                            ("search", {"query": "salary"})):
        with pytest.raises(RepositoryRefused) as caught:
            await tool(tmp_path, source, roots(root), name, **arguments)
        assert str(outside) not in str(caught.value) and "91000" not in str(caught.value)


async def test_alternates_out_of_the_roots_are_refused_inside_them_read(
        tmp_path: Path) -> None:
    """``git clone --shared`` writes ``objects/info/alternates``: the clone's objects live
    in the origin. Before: an origin outside the roots was read through a clone inside
    them (a ``file://`` URL of it too)."""
    outside = tmp_path / "outside"
    sha = new_repo(outside, {"payroll.md": SECRET_LINE + "\n"})
    root = tmp_path / "root"
    root.mkdir()
    git(root, "clone", "-q", "--shared", str(outside), str(root / "thin"))
    assert (root / "thin" / ".git" / "objects" / "info" / "alternates").exists()
    for location in (str(root / "thin"), f"file://{root / 'thin'}"):
        source = GitSourceSpec(name="notes", repo=location, commit=sha)
        with pytest.raises(RepositoryRefused, match="alternates names an object folder "
                                                    "outside the source roots") as got:
            check_source(source, roots(root), locations(tmp_path))
        assert str(outside) not in str(got.value)
        with pytest.raises(RepositoryRefused):
            await tool(tmp_path, source, roots(root), "read", path="payroll.md", **LINES)
        with pytest.raises(RepositoryRefused):
            await tool(tmp_path, source, roots(root), "search", query="salary")
    # an alternate of an alternate is followed as git follows it
    git(root, "clone", "-q", "--shared", str(root / "thin"), str(root / "thinner"))
    with pytest.raises(RepositoryRefused, match="alternates"):
        check_source(spec(root / "thinner", sha), roots(root), locations(tmp_path))
    # the same clone with its origin inside the roots is read as before
    both = roots(root, outside)
    check_source(spec(root / "thin", sha), both, locations(tmp_path))
    read = await tool(tmp_path, spec(root / "thin", sha), both, "read", path="payroll.md", **LINES)
    assert SECRET_LINE in str(read)


async def test_the_worker_s_git_environment_never_relocates_a_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker started from a git hook inherits ``GIT_DIR`` (and, in a pre-receive hook,
    ``GIT_ALTERNATE_OBJECT_DIRECTORIES``). Before: every read went to that repository or
    found objects in those folders."""
    outside = tmp_path / "outside"
    other = new_repo(outside, {"payroll.md": SECRET_LINE + "\n"})
    root = tmp_path / "root"
    own = new_repo(root / "proj", {"plan.md": "tenant A salary plan\n"})
    root_roots = roots(root)
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(outside / ".git" / "objects"))
    with pytest.raises(ToolRejected, match="not found"):
        await tool(tmp_path, spec(root / "proj", other), root_roots, "list")
    monkeypatch.delenv("GIT_ALTERNATE_OBJECT_DIRECTORIES")
    monkeypatch.setenv("GIT_DIR", str(outside / ".git"))
    check_source(spec(root / "proj", own), root_roots, locations(tmp_path))
    listed = await tool(tmp_path, spec(root / "proj", own), root_roots, "list")
    assert listed["entries"] == ["plan.md"]
    with pytest.raises(ToolRejected, match="not found"):
        await tool(tmp_path, spec(root / "proj", other), root_roots, "list")
    assert await resolve_ref(str(root / "proj"), "main", name="notes") == own


async def test_a_replace_ref_never_changes_what_a_pinned_commit_holds(
        tmp_path: Path) -> None:
    """``refs/replace/<blob>`` makes git read another object in its place. Before: the
    pinned commit's file read as the replacement (SECURITY.md §5)."""
    repo = tmp_path / "root" / "proj"
    sha = new_repo(repo, {"plan.md": "the real plan\n"})
    blob = git(repo, "rev-parse", f"{sha}:plan.md")
    (repo / "fake.md").write_text("a planted plan\n", encoding="utf-8")
    fake = git(repo, "hash-object", "-w", str(repo / "fake.md"))
    git(repo, "replace", blob, fake)
    read = await tool(tmp_path, spec(repo, sha), roots(tmp_path / "root"), "read",
                      path="plan.md", **LINES)
    assert "the real plan" in str(read) and "planted" not in str(read)


# -- every git process goes through contracts.git_safety --------------------------------

RUNTIME = ("activities", "artifacts", "context", "contracts", "webconsole", "workflows",
           "evals", "pressroom.py", "worker.py", "settings.py")
_SPAWNERS = {"create_subprocess_exec", "create_subprocess_shell", "run", "Popen", "call",
             "check_call", "check_output", "execv", "execvp", "execvpe", "spawnv", "spawnvp"}


def _runtime_files() -> Iterator[Path]:
    for name in RUNTIME:
        path = REPO_ROOT / name
        yield from ([path] if path.is_file() else sorted(path.rglob("*.py")))


def _names_git(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == "git"
    if isinstance(node, ast.List | ast.Tuple) and node.elts:
        return _names_git(node.elts[0])
    return False


def test_no_runtime_module_spawns_git_but_through_git_invocation() -> None:
    """Every process that names ``git`` is built by ``git_invocation`` (so no call site can
    forget the ceiling or the environment): no spawn call anywhere in the runtime passes
    ``"git"`` itself, and the modules that run git call ``git_invocation``. Before:
    ``gitrepo.run_git`` and ``pins._run`` each built their own."""
    offenders, callers = [], set()
    for path in _runtime_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name == "git_invocation":
                callers.add(path.relative_to(REPO_ROOT).as_posix())
            if name in _SPAWNERS and node.args and _names_git(node.args[0]):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert offenders == []
    assert {"activities/sources/gitrepo.py", "workflows/pins.py",
            "contracts/git_safety.py"} <= callers


async def test_every_git_process_runs_confined(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """What the processes really got, through real tool calls (a ``search`` and a
    ``read``), ref resolution and submit check: each ran ``git`` with the safe options and
    a ceiling at its folder's parent, and none inherited ``GIT_DIR``."""
    repo = tmp_path / "root" / "proj"
    sha = new_repo(repo, {"plan.md": "the salary plan\n"})
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    seen: list[tuple[tuple[str, ...], dict[str, str]]] = []
    real_exec, real_run = asyncio.create_subprocess_exec, subprocess.run

    async def record_exec(*argv: str, **kwargs: Any) -> Any:
        seen.append((argv, kwargs["env"]))
        return await real_exec(*argv, **kwargs)

    def record_run(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.append((tuple(argv), kwargs["env"]))
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", record_exec)
    monkeypatch.setattr(subprocess, "run", record_run)
    root = roots(tmp_path / "root")
    check_source(spec(repo, sha), root, locations(tmp_path))
    found = await tool(tmp_path, spec(repo, sha), root, "search", query="salary")
    assert found["hit_count"] == 1
    await tool(tmp_path, spec(repo, sha), root, "read", path="plan.md", **LINES)
    await resolve_ref(str(repo), "main", name="notes")
    with pytest.raises(UnresolvedRef):
        await resolve_ref(f"file://{tmp_path}/none.git", "main", name="notes")
    assert len(seen) >= 6
    # the blobs a search reads are streamed by their own process: confined like the rest
    assert {"ls-tree", "cat-file"} <= {arg for argv, _ in seen for arg in argv}
    for argv, env in seen:
        assert argv[0] == "git" and argv[1:1 + len(SAFE_OPTIONS)] == SAFE_OPTIONS, argv
        folder = Path(os.path.realpath(argv[argv.index("-C") + 1]))
        assert env["GIT_CEILING_DIRECTORIES"] == str(folder.parent), argv
        assert "GIT_DIR" not in env and env["GIT_NO_REPLACE_OBJECTS"] == "1"


def test_a_refusal_is_a_path_refusal(tmp_path: Path, outer: tuple[Path, str]) -> None:
    """``RepositoryRefused`` is a ``PathRefused``: one line at the CLI, never retried."""
    repo, sha = outer
    with pytest.raises(PathRefused) as caught:
        check_source(spec(repo / "tenantA" / "notes", sha), roots(repo / "tenantA"),
                     locations(tmp_path))
    assert caught.value.non_retryable and caught.value.type == "RepositoryRefused"
