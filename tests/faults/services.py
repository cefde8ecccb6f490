"""What the fault cells break on purpose: a PostgreSQL server of their own, mounts.

``OwnPostgres`` is a throw-away PostgreSQL cluster (``initdb`` in a temporary folder, its own
port and socket folder) that one cell stops and starts; the suite's shared server (CI's,
``PRESSROOM_TEST_POSTGRES_URL``) is never touched. As root the server runs as the
``postgres`` user, as PostgreSQL requires.

The mount helpers need the right to mount (root with CAP_SYS_ADMIN, as in this
container); without it they return the ``mount`` command's own error, which the cell
prints as its skip reason. Root ignores file modes, so "read-only" here is a read-only
mount (``EROFS``), not a ``chmod``.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from client.devserver import free_port
from tests.waiting import wait_for


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


def _why(proc: subprocess.CompletedProcess[str]) -> str:
    text = (proc.stderr or proc.stdout or "").strip()
    return f"`{' '.join(proc.args)}` exited {proc.returncode}: {text or '(no output)'}"


# ------------------------------------------------------------------------------ mounts
def mount_tmpfs(folder: Path, size: str) -> str | None:
    """Mount a tmpfs of ``size`` on ``folder``; ``None``, or why it could not."""
    folder.mkdir(parents=True, exist_ok=True)
    proc = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder))
    return None if proc.returncode == 0 else _why(proc)


def bind_read_only(folder: Path) -> str | None:
    """Cover ``folder`` with a read-only bind mount of itself; ``None``, or why not.

    Files opened before keep their write access (Linux checks it at open): what opens
    ``folder``'s files after this gets ``EROFS``.
    """
    proc = _run("mount", "--bind", str(folder), str(folder))
    if proc.returncode != 0:
        return _why(proc)
    proc = _run("mount", "-o", "remount,bind,ro", str(folder))
    if proc.returncode != 0:
        unmount(folder)
        return _why(proc)
    return None


def unmount(folder: Path) -> None:
    proc = _run("umount", str(folder))
    if proc.returncode != 0:
        proc = _run("umount", "-l", str(folder))
        if proc.returncode != 0:
            raise RuntimeError(_why(proc))


def mounted(folder: Path) -> bool:
    target = str(folder.resolve())
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        return any(line.split()[1] == target for line in mounts)


def fill(folder: Path) -> Path:
    """Write a file into ``folder`` until its file system is full; the file."""
    filler = folder / "filler"
    chunk = b"\0" * (64 * 1024)
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    # the last partial pages too
    with filler.open("ab", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 512)
    return filler


# -------------------------------------------------------------------------- PostgreSQL
def postgres_bin() -> Path | None:
    """The folder of the newest installed PostgreSQL's server binaries."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class OwnPostgres:
    """A private PostgreSQL cluster on 127.0.0.1:<free port>, for one test."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        self.port = free_port()
        self.root: Path | None = None
        self.user: str | None = None

    def unavailable(self) -> str | None:
        """Why this machine cannot run one, or ``None``."""
        if self.bin is None:
            return "no PostgreSQL server binaries (initdb) on this machine"
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return "running as root and there is no postgres user to run initdb as"
            if shutil.which("runuser") is None:
                return "running as root and there is no runuser to run initdb as postgres"
        return None

    def _as_owner(self, *args: str) -> subprocess.CompletedProcess[str]:
        if self.user is not None:
            return _run("runuser", "-u", self.user, "--", *args)
        return _run(*args)

    @property
    def data(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def init(self) -> None:
        assert self.bin is not None
        self.root = Path(tempfile.mkdtemp(prefix="pressroom-faults-pg-"))
        if os.geteuid() == 0:
            self.user = "postgres"
            shutil.chown(self.root, user="postgres")
        proc = self._as_owner(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                              "--auth=trust", "-N", "-E", "UTF8")
        if proc.returncode != 0:
            raise RuntimeError(_why(proc))

    def start(self) -> None:
        assert self.bin is not None and self.root is not None
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c shared_buffers=16MB -c max_connections=60")
        proc = self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l",
                              str(self.root / "server.log"), "-o", options, "-w", "-t", "60",
                              "start")
        if proc.returncode != 0:
            raise RuntimeError(_why(proc) + "\n" + self.log())

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: every session's transaction is rolled back)."""
        assert self.bin is not None
        proc = self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode,
                              "-w", "-t", "60", "stop")
        if proc.returncode != 0:
            raise RuntimeError(_why(proc))

    def ready(self) -> bool:
        assert self.bin is not None
        proc = _run(str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port),
                    "-U", "postgres", "-q")
        return proc.returncode == 0

    async def wait_ready(self, deadline: float = 60.0) -> None:
        await wait_for(self.ready, deadline, f"pg_isready on port {self.port}", interval=0.2)

    def log(self) -> str:
        if self.root is None:
            return ""
        with contextlib.suppress(OSError):
            return (self.root / "server.log").read_text(encoding="utf-8",
                                                        errors="replace")[-3000:]
        return ""

    def remove(self) -> None:
        if self.root is None:
            return
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None
