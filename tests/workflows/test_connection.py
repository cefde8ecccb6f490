"""``client.connection``: how every client reaches Temporal — the precedence between the
flags, ``PRESSROOM_TEMPORAL_*``, Temporal's own ``TEMPORAL_*`` variables and the TOML
profile; configuration mistakes as one line before any connection; and real processes
(``pressroom status``) against a closed port, a wrong namespace, an API key sent to a server
without TLS, and a real mutual-TLS endpoint in front of the session's dev server.

The mTLS endpoint is a TLS-terminating TCP proxy (Python's ``ssl``, client certificates
required, ALPN h2) forwarding to the plaintext dev server, with a CA, server and client
certificate made here: what a self-hosted cluster behind mTLS looks like to a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import os
import ssl
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from client.connection import ConnectionConfigError, TlsFlags, resolve
from client.devserver import free_port
from settings import VARIABLES, Settings
from tests.workflows.jobkit import REPO_ROOT, roots_for, running_worker

CLI = [sys.executable, str(REPO_ROOT / "pressroom.py")]
#: seconds a misconfigured command may take to say so (the connect timeout is 15)
BOUND = 20.0


def env_of(**given: str) -> Settings:
    return Settings.from_env(given)


# --- precedence (no network) -------------------------------------------------------------

def test_defaults_when_nothing_is_set() -> None:
    target = resolve(Settings())
    assert (target.address, target.namespace) == ("localhost:7233", "default")
    assert target.kwargs["tls"] is False and "api_key" not in target.kwargs
    assert target.address_from == target.namespace_from == "the default"


def test_flag_beats_pressroom_variable_beats_temporal_variable_beats_profile(
        tmp_path: Path) -> None:
    toml = tmp_path / "temporal.toml"
    toml.write_text('[profile.default]\naddress = "profile:1"\nnamespace = "ns-profile"\n',
                    encoding="utf-8")
    file_only = {"TEMPORAL_CONFIG_FILE": str(toml)}
    t = resolve(env_of(**file_only))
    assert (t.address, t.namespace) == ("profile:1", "ns-profile")
    assert "profile 'default'" in t.address_from
    t = resolve(env_of(**file_only, TEMPORAL_ADDRESS="temporal:2", TEMPORAL_NAMESPACE="ns-t"))
    assert (t.address, t.namespace) == ("temporal:2", "ns-t")
    assert t.address_from == "TEMPORAL_ADDRESS"
    ours = env_of(**file_only, TEMPORAL_ADDRESS="temporal:2", TEMPORAL_NAMESPACE="ns-t",
                  PRESSROOM_TEMPORAL_ADDRESS="pressroom:3",
                  PRESSROOM_TEMPORAL_NAMESPACE="ns-p")
    t = resolve(ours)
    assert (t.address, t.namespace) == ("pressroom:3", "ns-p")
    assert (t.address_from, t.namespace_from) == ("PRESSROOM_TEMPORAL_ADDRESS",
                                                  "PRESSROOM_TEMPORAL_NAMESPACE")
    t = resolve(ours, address="flag:4", namespace="ns-flag")
    assert (t.address, t.namespace, t.address_from) == ("flag:4", "ns-flag", "--address")
    # an explicit PRESSROOM value equal to the default still wins (it was set)
    t = resolve(env_of(TEMPORAL_ADDRESS="temporal:2",
                       PRESSROOM_TEMPORAL_ADDRESS="localhost:7233"))
    assert t.address == "localhost:7233"
    # `pressroom web --address` sets the field through model_copy: it wins as well
    t = resolve(env_of(TEMPORAL_ADDRESS="temporal:2").model_copy(
        update={"temporal_address": "web:5"}))
    assert t.address == "web:5"


def test_a_named_profile_and_its_api_key(tmp_path: Path) -> None:
    toml = tmp_path / "temporal.toml"
    toml.write_text('[profile.default]\naddress = "d:1"\n\n[profile.cloud]\n'
                    'address = "ns.acct.tmprl.cloud:7233"\nnamespace = "ns.acct"\n'
                    'api_key = "profile-key"\n', encoding="utf-8")
    t = resolve(env_of(TEMPORAL_CONFIG_FILE=str(toml), TEMPORAL_PROFILE="cloud"))
    assert (t.address, t.namespace) == ("ns.acct.tmprl.cloud:7233", "ns.acct")
    assert t.kwargs["api_key"] == "profile-key" and t.kwargs["tls"] is not False
    assert t.security == "TLS + API key"
    assert "profile-key" not in repr(t) and "profile-key" not in t.describe()
    # the variable beats the profile's key; TEMPORAL_TLS=false turns TLS off regardless
    t = resolve(env_of(TEMPORAL_CONFIG_FILE=str(toml), TEMPORAL_PROFILE="cloud",
                       TEMPORAL_API_KEY="env-key", TEMPORAL_TLS="false"))
    assert t.kwargs["api_key"] == "env-key" and t.kwargs["tls"] is False
    with pytest.raises(ConnectionConfigError, match=r"profile 'nope'.*not found"):
        resolve(env_of(TEMPORAL_CONFIG_FILE=str(toml), TEMPORAL_PROFILE="nope"))
    with pytest.raises(ConnectionConfigError, match="TEMPORAL_CONFIG_FILE: no such file"):
        resolve(env_of(TEMPORAL_CONFIG_FILE=str(tmp_path / "missing.toml")))


def test_the_settings_do_not_show_the_api_key() -> None:
    s = env_of(TEMPORAL_API_KEY="very-secret-key")
    assert "very-secret-key" not in repr(s) and "very-secret-key" not in str(s)
    assert {v.name for v in VARIABLES if v.field == "temporal_env"} >= {
        "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE",
        "TEMPORAL_CONFIG_FILE", "TEMPORAL_TLS_CLIENT_CERT_PATH"}


@pytest.mark.parametrize("key", ["abc def", "abc\n", "clé-ü", "\tsecretz", "a\x00b"])
def test_an_unusable_api_key_is_refused_without_showing_it(key: str) -> None:
    with pytest.raises(ConnectionConfigError) as caught:
        resolve(env_of(TEMPORAL_API_KEY=key))
    text = str(caught.value)
    assert text.startswith("TEMPORAL_API_KEY: not a usable API key") and "\n" not in text
    assert key.strip() not in text


def test_tls_files(tmp_path: Path) -> None:
    with pytest.raises(ConnectionConfigError, match=r"cannot read TLS file .*c\.pem"):
        resolve(env_of(TEMPORAL_TLS_CLIENT_CERT_PATH=str(tmp_path / "c.pem"),
                       TEMPORAL_TLS_CLIENT_KEY_PATH=str(tmp_path / "c.key")))
    (tmp_path / "c.pem").write_text("cert", encoding="utf-8")
    with pytest.raises(ConnectionConfigError, match="go together"):
        resolve(env_of(TEMPORAL_TLS_CLIENT_CERT_PATH=str(tmp_path / "c.pem")))
    # the worker's flags replace the variables' files
    (tmp_path / "k.pem").write_text("key", encoding="utf-8")
    t = resolve(env_of(TEMPORAL_TLS_CLIENT_CERT_PATH=str(tmp_path / "missing.pem"),
                       TEMPORAL_TLS_CLIENT_KEY_PATH=str(tmp_path / "missing.key"),
                       TEMPORAL_TLS_SERVER_NAME="sni.test"),
                tls=TlsFlags(cert=str(tmp_path / "c.pem"), key=str(tmp_path / "k.pem")))
    assert t.security == "mTLS"
    assert t.kwargs["tls"].client_cert == b"cert" and t.kwargs["tls"].domain == "sni.test"


# --- real processes ----------------------------------------------------------------------

def _base_env(home: Path) -> dict[str, str]:
    """The test process's environment without any Pressroom or Temporal client setting
    (so a developer's own TEMPORAL_* or profile cannot leak in)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PRESSROOM_", "TEMPORAL_"))}
    return {**env, "PRESSROOM_HOME": str(home), "COLUMNS": "200",
            "TEMPORAL_CONFIG_FILE": str(_empty_toml(home))}


def _empty_toml(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "temporal.toml"
    if not path.exists():
        path.write_text("", encoding="utf-8")
    return path


async def cli(env: dict[str, str], *args: str) -> tuple[int, str, str, float]:
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(*CLI, *args, env=env, cwd=REPO_ROOT,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode(), time.monotonic() - started


def doctor_lines(out: str) -> dict[str, tuple[str, str]]:
    """``pressroom doctor``'s output: check name -> (outcome, detail)."""
    return {ln[6:24].strip(): (ln[:4].strip(), ln[25:]) for ln in out.splitlines()
            if ln.strip()}


def one_line_error(rc: int, err: str, *needles: str) -> str:
    assert rc == 1, err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.asyncio(loop_scope="session")
async def test_unreachable_address_is_one_line_in_bounded_time(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    env = {**_base_env(tmp_path / "home"), "TEMPORAL_ADDRESS": f"127.0.0.1:{port}"}
    for command in (["status", "some-job"], ["list"]):
        rc, _out, err, took = await cli(env, *command)
        one_line_error(rc, err, f"cannot reach Temporal at 127.0.0.1:{port}",
                       "connection refused")
        assert took < BOUND


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.parametrize(("variables", "needles"), [
    ({"TEMPORAL_TLS_CLIENT_CERT_PATH": "/nonexistent/client.pem",
      "TEMPORAL_TLS_CLIENT_KEY_PATH": "/nonexistent/client.key"},
     ("cannot read TLS file /nonexistent/client.pem", "No such file")),
    ({"TEMPORAL_API_KEY": "key with spaces"},
     ("TEMPORAL_API_KEY: not a usable API key", "whitespace")),
    ({"TEMPORAL_PROFILE": "staging"}, ("profile 'staging'", "not found")),
])
async def test_a_configuration_mistake_is_one_line_before_connecting(
        tmp_path: Path, variables: dict[str, str], needles: tuple[str, ...]) -> None:
    port = free_port()
    env = {**_base_env(tmp_path / "home"), "TEMPORAL_ADDRESS": f"127.0.0.1:{port}",
           **variables}
    rc, _out, err, took = await cli(env, "status", "some-job")
    line = one_line_error(rc, err, *needles)
    assert "cannot reach" not in line  # refused before any connection
    assert "key with spaces" not in err
    assert took < BOUND


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_a_wrong_namespace_is_named(temporal_env: Any, tmp_path: Path) -> None:
    address = temporal_env.client.service_client.config.target_host
    env = {**_base_env(tmp_path / "home"), "TEMPORAL_ADDRESS": address,
           "TEMPORAL_NAMESPACE": "no-such-namespace"}
    rc, _out, err, took = await cli(env, "status", "some-job")
    one_line_error(rc, err, "namespace 'no-such-namespace' does not exist",
                   "from TEMPORAL_NAMESPACE")
    assert took < BOUND
    # PRESSROOM_TEMPORAL_NAMESPACE wins over TEMPORAL_NAMESPACE: the right one is used
    rc, _out, err, _took = await cli({**env, "PRESSROOM_TEMPORAL_NAMESPACE": "default"},
                                     "status", "some-job")
    one_line_error(rc, err, "no job 'some-job'")


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_an_api_key_to_a_server_without_tls_is_one_line(temporal_env: Any,
                                                              tmp_path: Path) -> None:
    """An API key turns TLS on (as for Temporal Cloud); the plaintext dev server cannot
    answer a TLS handshake: said in one line, in bounded time, the key not shown."""
    address = temporal_env.client.service_client.config.target_host
    env = {**_base_env(tmp_path / "home"), "TEMPORAL_ADDRESS": address,
           "TEMPORAL_API_KEY": "tmprl-test-key-123"}
    rc, _out, err, took = await cli(env, "list")
    one_line_error(rc, err, f"cannot reach Temporal at {address}", "TLS + API key")
    assert "tmprl-test-key-123" not in err
    assert took < BOUND


# --- a real mutual-TLS endpoint ------------------------------------------------------------

def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _cert(subject: str, key: ec.EllipticCurvePrivateKey, issuer: str,
          issuer_key: ec.EllipticCurvePrivateKey, *, ca: bool = False,
          san: list[x509.GeneralName] | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject))
               .issuer_name(_name(issuer)).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_pki(folder: Path) -> dict[str, Path]:
    """A CA, a server certificate for ``pressroom.test`` / 127.0.0.1 and a client
    certificate, as PEM files."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, server_key, client_key = (ec.generate_private_key(ec.SECP256R1())
                                      for _ in range(3))
    ca = _cert("pressroom test CA", ca_key, "pressroom test CA", ca_key, ca=True)
    server = _cert("pressroom.test", server_key, "pressroom test CA", ca_key,
                   san=[x509.DNSName("pressroom.test"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    client = _cert("pressroom-worker", client_key, "pressroom test CA", ca_key)
    files: dict[str, Path] = {}
    for name, cert, key in (("ca", ca, ca_key), ("server", server, server_key),
                            ("client", client, client_key)):
        files[name] = folder / f"{name}.pem"
        files[name].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        files[f"{name}_key"] = folder / f"{name}.key"
        files[f"{name}_key"].write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        files[f"{name}_key"].chmod(0o600)
    return files


@contextlib.asynccontextmanager
async def mtls_proxy(upstream: str, pki: dict[str, Path]) -> AsyncIterator[str]:
    """A TLS endpoint requiring a client certificate from ``pki``'s CA, forwarding the
    decrypted bytes to ``upstream`` (the plaintext dev server); yields its address."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki["server"], pki["server_key"])
    context.load_verify_locations(pki["ca"])
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])
    host, port = upstream.rsplit(":", 1)
    tasks: set[asyncio.Task[None]] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            return
        for task in (asyncio.create_task(pipe(reader, up_writer)),
                     asyncio.create_task(pipe(up_reader, writer))):
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_every_client_reaches_an_mtls_cluster(temporal_env: Any, tmp_path: Path,
                                                    task_queue: str) -> None:
    """Through a real mTLS endpoint: a job command with the TLS variables gets the server's
    answer ("no job"), without a client certificate it is refused in one line, and the
    worker (``--tls-*`` flags) polls through it — which ``pressroom doctor`` sees."""
    from worker import connect as worker_connect

    pki = make_pki(tmp_path / "pki")
    upstream = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    async with mtls_proxy(upstream, pki) as address:
        tls_env = {**_base_env(home), "TEMPORAL_ADDRESS": address,
                   "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki["ca"]),
                   "TEMPORAL_TLS_SERVER_NAME": "pressroom.test",
                   "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki["client"]),
                   "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pki["client_key"])}
        rc, _out, err, _took = await cli(tls_env, "status", "no-such-job")
        one_line_error(rc, err, "no job 'no-such-job'")  # the server answered, over mTLS

        no_cert = {k: v for k, v in tls_env.items() if "CLIENT" not in k}
        rc, _out, err, took = await cli(no_cert, "status", "no-such-job")
        one_line_error(rc, err, f"Temporal at {address}")
        assert took < BOUND
        rc, _out, err, _took = await cli({**tls_env, "TEMPORAL_TLS": "false"},
                                         "status", "no-such-job")
        one_line_error(rc, err, f"cannot reach Temporal at {address}", "TLS off")

        # the worker, with the flags of `pressroom worker` (and the variables' server name)
        settings = Settings.from_env({"TEMPORAL_TLS_SERVER_NAME": "pressroom.test"})
        client = await worker_connect(address, "default", tls_cert=str(pki["client"]),
                                      tls_key=str(pki["client_key"]), tls_ca=str(pki["ca"]),
                                      settings=settings)
        from activities.runtime import ActivityRuntime
        from tests.workflows.conftest import LOCAL

        runtime = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}",
                                  locations=LOCAL, roots=roots_for(tmp_path))
        async with running_worker(client, runtime, task_queue):
            rc, out, err, _took = await cli(tls_env, "doctor", "--task-queue", task_queue)
        lines = doctor_lines(out)
        assert lines["temporal config"][0] == "ok" and "mTLS" in lines["temporal config"][1]
        for name in ("temporal server", "namespace", "search attributes", "worker"):
            assert lines[name][0] == "ok", out
        assert "1 worker(s)" in lines["worker"][1]


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_the_embedded_dev_server_ignores_temporal_client_variables(
        tmp_path: Path) -> None:
    """`pressroom dev` / `demo` run their own plain local server: an API key, TLS files or a
    namespace exported for a real cluster (TEMPORAL_*) must not stop their worker."""
    import io

    from rich.console import Console

    from cli.embedded import embedded
    from worker import run_worker

    home = tmp_path / "home"
    home.mkdir()
    settings = Settings.from_env({
        "PRESSROOM_HOME": str(home), "TEMPORAL_API_KEY": "cloud-key",
        "TEMPORAL_NAMESPACE": "cloud-ns", "TEMPORAL_TLS_CLIENT_CERT_PATH": "/nonexistent.pem",
        "TEMPORAL_TLS_CLIENT_KEY_PATH": "/nonexistent.key"})
    async with embedded(Console(file=io.StringIO()), settings, run_worker,
                        db=home / "temporal.db", port=free_port(), headless=True,
                        task_queue="pressroom-embedded-test", helper_processes=0) as (
                            _server, client):
        assert client.namespace == "default"  # the worker started (else embedded raised)


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_an_unreachable_database_is_one_line(temporal_env: Any, tmp_path: Path,
                                                   docs: Path) -> None:
    """`pressroom run` with the store's PostgreSQL port closed: one line naming the server
    (not the password), in bounded time, and no job started."""
    import yaml

    from tests.workflows.jobkit import job_dict, write_registry

    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    env = {**_base_env(home), "TEMPORAL_ADDRESS": address,
           "PRESSROOM_DATABASE_URL": f"postgresql+asyncpg://pressroom:hunter2@127.0.0.1:"
                                     f"{free_port()}/pressroom"}
    write_registry(home, "alice")
    data = job_dict(tmp_path, docs)
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    rc, _out, err, took = await cli(env, "run", str(job_file))
    one_line_error(rc, err, "cannot reach PostgreSQL at 127.0.0.1:")
    assert "hunter2" not in err and took < BOUND
    rc, _out, err, _took = await cli(env, "status", data["job_id"])
    one_line_error(rc, err, f"no job {data['job_id']!r}")
