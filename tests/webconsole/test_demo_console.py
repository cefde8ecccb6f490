"""``pressroom demo`` on a terminal, decided in the review console.

The real command runs under a pseudo-terminal (so stdin is a TTY and the demo serves the
console) with a fresh ``PRESSROOM_HOME``; the test reads the three lines it prints (console
address, one-time sign-in link, the demo reviewer's password), signs in through the link
with a real HTTP client, finds the demo's job among those awaiting its review, posts an
approval from the review page's form, and expects the demo to notice (``decided in the
review console``), publish and exit 0 — leaving no process behind. Its own dev server (port
7233 when free, else a free port) and console (8780 when free, else a free port) are read
from what it prints, never assumed.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.temporal, pytest.mark.slow]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_CONSOLE = re.compile(r"review console (http://127\.0\.0\.1:\d+)\s")
_SIGNIN = re.compile(r"one-time sign-in (http://\S+/signin/once\?token=\S+)\s")
_PASSWORD = re.compile(r"demo-reviewer's password \(signs a decision\) (\S+)\s")
_JOB = re.compile(r"job (\S+): ")
_ARTICLE = re.compile(r"  article (\S.*?)\s*\n")
_PROMPT = re.compile(r"approve / changes / reject \[approve\]: ")


class Demo:
    """The demo's output read from the pty master without blocking, against deadlines."""

    def __init__(self, proc: subprocess.Popen[bytes], master: int) -> None:
        self.proc, self.master = proc, master
        self.text = ""
        self.eof = False
        self.seen: dict[int, str] = {}  # descendant pid -> its /proc start time

    def _pump(self, timeout: float) -> None:
        if self.eof:
            time.sleep(min(timeout, 0.05))
            return
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every slave end is closed
                chunk = b""
            if not chunk:
                self.eof = True
            self.text += _ANSI.sub("", chunk.decode("utf-8", "replace").replace("\r\n", "\n"))
        self.seen.update(descendants(self.proc.pid))

    def expect(self, pattern: re.Pattern[str], timeout: float,
               before: re.Pattern[str] | None = None) -> re.Match[str]:
        """The first match of ``pattern``; fails at the deadline, at the end of the output,
        or as soon as ``before`` shows up without it."""
        deadline = time.monotonic() + timeout
        while True:
            found = pattern.search(self.text)
            if found:
                return found
            if (self.eof or time.monotonic() > deadline
                    or (before is not None and before.search(self.text))):
                raise AssertionError(f"no {pattern.pattern!r} in the demo's output "
                                     f"(exit {self.proc.poll()}):\n{self.text}")
            self._pump(min(0.5, max(0.0, deadline - time.monotonic())))

    def wait_exit(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None or not self.eof:
            if time.monotonic() > deadline:
                if self.proc.poll() is not None:
                    break  # exited; a grandchild still holds the terminal
                raise AssertionError(f"the demo did not exit:\n{self.text}")
            self._pump(0.2)
        return self.proc.wait()


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time) of ``pid`` from ``/proc``, or ``None`` once it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    if fields[0] == "Z":
        return None  # a zombie runs nothing
    return int(fields[1]), fields[19]


def descendants(root: int) -> dict[int, str]:
    """Every live descendant of ``root`` (the dev server runs in a session of its own, so
    the demo's process group alone does not reach it)."""
    parents: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            parents[int(entry)] = st
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        children = {pid for pid, (ppid, _) in parents.items() if ppid in frontier}
        children -= found.keys()
        found.update({pid: parents[pid][1] for pid in children})
        frontier = children
    return found


def alive(seen: dict[int, str]) -> list[int]:
    return [pid for pid, start in seen.items()
            if (st := _stat(pid)) is not None and st[1] == start]


@contextlib.contextmanager
def demo_on_a_terminal(home: Path) -> Iterator[Demo]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRESSROOM_")}
    env.update(PRESSROOM_HOME=str(home), COLUMNS="200", NO_COLOR="1", TERM="dumb")
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, str(REPO_ROOT / "pressroom.py"), "demo"],
                            stdin=slave, stdout=slave, stderr=slave, cwd=REPO_ROOT, env=env,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    demo = Demo(proc, master)
    try:
        yield demo
    finally:
        demo.seen.update(descendants(proc.pid))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in alive(demo.seen):  # the dev server: its own session and group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(10)
        os.close(master)
        deadline = time.monotonic() + 10
        while alive(demo.seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(demo.seen), f"left running: {alive(demo.seen)}"


class _Form(HTMLParser):
    """The hidden fields of the review page's decision form."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = False
        self.action: str | None = None
        self.hidden: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "form" and a.get("id") == "decision-form":
            self.inside, self.action = True, a.get("action")
        elif tag == "input" and self.inside and a.get("type") == "hidden":
            self.hidden[a.get("name") or ""] = a.get("value") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False


def _until(what: str, timeout: float, probe: Callable[[], bool]) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def test_demo_on_a_terminal_is_decided_in_the_console(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with demo_on_a_terminal(home) as demo:
        job_id = demo.expect(_JOB, 60).group(1)
        url = demo.expect(_CONSOLE, 60, before=_PROMPT).group(1)
        signin = demo.expect(_SIGNIN, 5).group(1)
        password = demo.expect(_PASSWORD, 5).group(1)
        assert signin.startswith(f"{url}/signin/once?token=")
        # the draft is shown and the prompt waits: the decision comes from the browser
        demo.expect(_PROMPT, 60)

        with httpx.Client(base_url=url, timeout=30) as web:
            first = web.get(signin)
            assert first.status_code == 303, first.text
            assert web.cookies, "the one-time link set no session cookie"
            again = httpx.get(signin, timeout=30)  # no cookies: the link alone
            assert again.status_code == 401, "the one-time link worked twice"

            review = f"/jobs/{job_id}/review"

            def listed() -> bool:
                page = web.get("/", params={"status": "mine"})
                assert page.status_code == 200, page.text
                return f'href="{review}"' in page.text

            _until(f"{job_id} among the jobs awaiting demo-reviewer", 30, listed)
            page = web.get(review)
            assert page.status_code == 200, page.text
            form = _Form()
            form.feed(page.text)
            assert form.action == review
            fields = {k: form.hidden[k] for k in ("csrf_token", "draft_revision", "draft_hash",
                                                   "destination")}
            decided = web.post(review, data={**fields, "decision": "approve",
                                             "password": password})
            assert decided.status_code == 303, decided.text
            assert decided.headers["location"] == f"/jobs/{job_id}?decided=approve"

        demo.expect(re.compile(r"decided in the review console"), 30)
        demo.expect(re.compile(r"^published$", re.M), 60)
        article = Path(demo.expect(_ARTICLE, 10).group(1))
        assert demo.wait_exit(60) == 0, demo.text
        assert demo.seen, "the demo's dev server was never seen among its children"
        assert not alive(demo.seen), "the demo left its dev server running"
    assert article.is_file()
    assert article.is_relative_to(home / "published")
    assert "approve / changes / reject" not in demo.text.split("decided in the review")[1]
