"""``Settings.from_env``: defaults, every variable, the deprecated ``PRESSROOM_STORE_URL``,
bad values (one line naming the variable), and docs/configuration.md's table listing them all
(the test hooks: tests/README.md's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import settings as settings_module
from settings import (
    DATABASE_URL,
    DEPRECATED_NAMES,
    STORE_URL,
    VARIABLES,
    Settings,
    SettingsError,
    load,
)

REPO = Path(__file__).resolve().parents[1]


def test_defaults() -> None:
    s = Settings.from_env({})
    assert s == Settings()
    home = Path.home() / ".pressroom"
    assert s.home == home
    assert s.database_url is None
    assert s.store_url == f"sqlite+aiosqlite:///{home / 'pressroom.db'}"
    assert s.fixtures is None and s.fixtures_dir == home / "fixtures"
    assert (s.temporal_address, s.temporal_namespace, s.task_queue) == (
        "localhost:7233", "default", "pressroom")
    assert s.helper_processes is None
    assert s.helper_count(2) == 1 and s.helper_count(8) == 1
    assert s.helper_count(1) == 0 and s.helper_count(None) == 0
    assert s.worker_grace_seconds == 10.0
    assert s.worker_drain_seconds == 20.0
    assert s.reviewer is None
    assert s.debug is False


def test_unrelated_variables_are_ignored() -> None:
    assert Settings.from_env({"PATH": "/bin", "PRESSROOM_TEST_PAUSE_AT": "draft",
                              "PRESSROOM_TEST_POSTGRES_URL": "postgresql://x"}) == Settings()


@pytest.mark.parametrize(("variable", "raw", "field", "want"), [
    ("PRESSROOM_HOME", "/srv/pressroom", "home", Path("/srv/pressroom")),
    ("PRESSROOM_DATABASE_URL", "postgresql+asyncpg://u@h/db", "database_url",
     "postgresql+asyncpg://u@h/db"),
    ("PRESSROOM_FIXTURES", "/srv/fixtures", "fixtures", Path("/srv/fixtures")),
    ("PRESSROOM_SOURCE_ROOTS", f"/srv/docs{os.pathsep}{os.pathsep} /srv/repos ", "source_roots",
     (Path("/srv/docs"), Path("/srv/repos"))),
    ("PRESSROOM_PUBLISH_ROOTS", "/srv/published", "publish_roots", (Path("/srv/published"),)),
    ("PRESSROOM_TENANT_SOURCE_ROOTS", f" acme=/srv/a{os.pathsep}/srv/a2 ; beta=/srv/b;acme=/x",
     "tenant_source_roots", {"acme": (Path("/srv/a"), Path("/srv/a2"), Path("/x")),
                             "beta": (Path("/srv/b"),)}),
    ("PRESSROOM_TENANT_PUBLISH_ROOTS", "acme=/srv/a/out", "tenant_publish_roots",
     {"acme": (Path("/srv/a/out"),)}),
    ("PRESSROOM_REGISTERED_REVIEWERS_ONLY", "on", "registered_reviewers_only", True),
    ("PRESSROOM_REGISTERED_REVIEWERS_ONLY", "off", "registered_reviewers_only", False),
    ("PRESSROOM_TEMPORAL_ADDRESS", "temporal.internal:7233", "temporal_address",
     "temporal.internal:7233"),
    ("PRESSROOM_TEMPORAL_NAMESPACE", "ns", "temporal_namespace", "ns"),
    ("PRESSROOM_TASK_QUEUE", "q", "task_queue", "q"),
    ("PRESSROOM_HELPER_PROCESSES", "3", "helper_processes", 3),
    ("PRESSROOM_HELPER_PROCESSES", " 0 ", "helper_processes", 0),
    ("PRESSROOM_WORKER_GRACE_SECONDS", "1.5", "worker_grace_seconds", 1.5),
    ("PRESSROOM_WORKER_GRACE_SECONDS", "-4", "worker_grace_seconds", 0.0),
    ("PRESSROOM_WORKER_DRAIN_SECONDS", "2.5", "worker_drain_seconds", 2.5),
    ("PRESSROOM_WORKER_DRAIN_SECONDS", "-1", "worker_drain_seconds", 0.0),
    ("PRESSROOM_REVIEWER", "alice", "reviewer", "alice"),
    ("PRESSROOM_REVIEWER_KEY", "/keys/alice.key", "reviewer_key", Path("/keys/alice.key")),
    ("PRESSROOM_ATTESTATION_KEYS", "/etc/pressroom/attestation.keys", "attestation_keys",
     Path("/etc/pressroom/attestation.keys")),
    ("PRESSROOM_DEBUG", "1", "debug", True),
    ("PRESSROOM_DEBUG", "0", "debug", True),  # any non-empty value, as before
    ("PRESSROOM_METRICS_PORT", " 9464 ", "metrics_port", 9464),
    ("PRESSROOM_HEALTH_PORT", "8081", "health_address", ("127.0.0.1", 8081)),
    ("PRESSROOM_HEALTH_PORT", " 0.0.0.0:8081 ", "health_address", ("0.0.0.0", 8081)),
    ("PRESSROOM_HEALTH_PORT", "[::]:8081", "health_address", ("::", 8081)),
    ("PRESSROOM_TRACING", "on", "tracing", True),
    ("PRESSROOM_TRACING", "0", "tracing", False),
    ("PRESSROOM_LOG_FORMAT", "JSON", "log_format", "json"),
    ("PRESSROOM_PRICES", "/etc/pressroom/prices.yaml", "prices",
     Path("/etc/pressroom/prices.yaml")),
    ("PRESSROOM_MODEL_ENDPOINTS", "/etc/pressroom/endpoints.yaml", "model_endpoints",
     Path("/etc/pressroom/endpoints.yaml")),
    ("PRESSROOM_WEB_ALLOWED_DOMAINS", " example.org, ,docs.python.org ", "web_allowed_domains",
     ("example.org", "docs.python.org")),
    ("PRESSROOM_WEB_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128", "web_allowed_networks",
     ("127.0.0.0/8", "::1/128")),
    ("PRESSROOM_MCP_SERVERS", "/etc/pressroom/mcp.yaml", "mcp_servers",
     Path("/etc/pressroom/mcp.yaml")),
    # Temporal's own client variables are kept as read (client.connection uses them)
    *((name, raw, "temporal_env", {name: raw}) for name, raw in (
        ("TEMPORAL_ADDRESS", "cloud.example:7233"), ("TEMPORAL_NAMESPACE", "ns.acct"),
        ("TEMPORAL_API_KEY", "key"), ("TEMPORAL_TLS", "true"),
        ("TEMPORAL_TLS_CLIENT_CERT_PATH", "/tls/c.pem"),
        ("TEMPORAL_TLS_CLIENT_KEY_PATH", "/tls/c.key"),
        ("TEMPORAL_TLS_SERVER_CA_CERT_PATH", "/tls/ca.pem"),
        ("TEMPORAL_TLS_SERVER_NAME", "temporal.internal"), ("TEMPORAL_PROFILE", "prod"),
        ("TEMPORAL_CONFIG_FILE", "/etc/temporal.toml"))),
])
def test_each_variable(variable: str, raw: str, field: str, want: Any) -> None:
    s = Settings.from_env({variable: raw})
    assert getattr(s, field) == want
    # ... and nothing else moves
    others = {f: v for f, v in s.model_dump().items() if f != field}
    assert others == {f: v for f, v in Settings().model_dump().items() if f != field}


def test_every_variable_is_parametrized_above() -> None:
    marks = test_each_variable.pytestmark
    covered = {params[0] for m in marks if m.name == "parametrize" for params in m.args[1]}
    assert covered == {v.name for v in VARIABLES}
    assert {v.field for v in VARIABLES} == set(Settings.model_fields)


@pytest.mark.parametrize("variable", [v.name for v in VARIABLES])
def test_empty_means_default(variable: str) -> None:
    assert Settings.from_env({variable: ""}) == Settings()


def test_derived_values_follow_home() -> None:
    s = Settings.from_env({"PRESSROOM_HOME": "/srv/p"})
    assert s.store_url == "sqlite+aiosqlite:////srv/p/pressroom.db"
    assert s.fixtures_dir == Path("/srv/p/fixtures")
    s = Settings.from_env({"PRESSROOM_HOME": "/srv/p", "PRESSROOM_FIXTURES": "/f",
                           "PRESSROOM_DATABASE_URL": "sqlite+aiosqlite:////db/x.db"})
    assert (s.fixtures_dir, s.store_url) == (Path("/f"), "sqlite+aiosqlite:////db/x.db")


def test_home_and_fixtures_expand_the_user_directory(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    s = Settings.from_env({"PRESSROOM_HOME": "~/p", "PRESSROOM_FIXTURES": "~/f"})
    assert (s.home, s.fixtures_dir) == (tmp_path / "p", tmp_path / "f")
    # the same parsing serves the ${PRESSROOM_HOME} / ${PRESSROOM_FIXTURES} placeholders
    from contracts.source_specs import expand_location

    env = {"PRESSROOM_HOME": "~/p"}
    assert expand_location("${PRESSROOM_HOME}/x", env) == str(tmp_path / "p" / "x")
    assert expand_location("${PRESSROOM_FIXTURES}/x", env) == str(tmp_path / "p/fixtures/x")


def test_the_worker_expands_locations_from_its_settings_not_the_environment(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What a worker was started with decides where ``${PRESSROOM_FIXTURES}`` points; a
    later change of the process environment does not (nothing below the entry points reads
    it)."""
    from contracts.source_specs import expand_location

    settings = Settings.from_env({"PRESSROOM_HOME": str(tmp_path / "h")})
    monkeypatch.setenv("PRESSROOM_FIXTURES", str(tmp_path / "elsewhere"))
    assert settings.locations == {"PRESSROOM_HOME": str(tmp_path / "h"),
                                  "PRESSROOM_FIXTURES": str(tmp_path / "h" / "fixtures")}
    assert expand_location("${PRESSROOM_FIXTURES}/docs", settings.locations) == str(
        tmp_path / "h" / "fixtures" / "docs")


def test_reading_does_not_create_home(tmp_path: Path) -> None:
    Settings.from_env({"PRESSROOM_HOME": str(tmp_path / "home")})
    assert not (tmp_path / "home").exists()


def test_settings_are_frozen() -> None:
    s = Settings()
    with pytest.raises(ValidationError):
        s.task_queue = "other"  # type: ignore[misc]


def test_the_deprecated_store_url_still_works_with_a_warning() -> None:
    url = "postgresql+asyncpg://u@h/db"
    with pytest.warns(DeprecationWarning, match=f"{STORE_URL} is deprecated.*{DATABASE_URL}"):
        s = Settings.from_env({STORE_URL: url})
    assert s.database_url == url and s.store_url == url
    assert DEPRECATED_NAMES == {STORE_URL: DATABASE_URL}
    # both names, same value: fine, still told
    with pytest.warns(DeprecationWarning):
        assert Settings.from_env({STORE_URL: url, DATABASE_URL: url}).database_url == url
    # load() hands the note to the entry points as text, whatever the warning filters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s, notes = load({STORE_URL: url})
    assert s.database_url == url
    assert len(notes) == 1 and STORE_URL in notes[0] and DATABASE_URL in notes[0]
    assert load({DATABASE_URL: url}) == (Settings(database_url=url), [])


def test_both_database_names_disagreeing_is_refused() -> None:
    with pytest.raises(SettingsError, match=f"{STORE_URL}.*{DATABASE_URL}"):
        Settings.from_env({STORE_URL: "sqlite+aiosqlite:////a.db",
                           DATABASE_URL: "sqlite+aiosqlite:////b.db"})


@pytest.mark.parametrize(("variable", "raw", "message"), [
    ("PRESSROOM_HELPER_PROCESSES", "two", "not a whole number: 'two'"),
    ("PRESSROOM_HELPER_PROCESSES", "1.5", "not a whole number: '1.5'"),
    ("PRESSROOM_HELPER_PROCESSES", "-1", "must be 0 or more, got -1"),
    ("PRESSROOM_WORKER_GRACE_SECONDS", "soon", "must be a number of seconds, got 'soon'"),
    ("PRESSROOM_WORKER_DRAIN_SECONDS", "later", "must be a number of seconds, got 'later'"),
    ("PRESSROOM_SOURCE_ROOTS", f"/srv/docs{os.pathsep}docs", "not an absolute path: 'docs'"),
    ("PRESSROOM_PUBLISH_ROOTS", "published", "not an absolute path: 'published'"),
    ("PRESSROOM_TENANT_SOURCE_ROOTS", "acme", "not TENANT=DIR[:DIR...]: 'acme'"),
    ("PRESSROOM_TENANT_SOURCE_ROOTS", "=/srv/a", "not TENANT=DIR[:DIR...]: '=/srv/a'"),
    ("PRESSROOM_TENANT_PUBLISH_ROOTS", "acme=out", "not an absolute path: 'out'"),
    ("PRESSROOM_TENANT_PUBLISH_ROOTS", "acme=", "tenant 'acme' is bound to no folder"),
    ("PRESSROOM_REGISTERED_REVIEWERS_ONLY", "maybe", "must be on or off, got 'maybe'"),
    ("PRESSROOM_HEALTH_PORT", "http", "not a port number: 'http'"),
    ("PRESSROOM_HEALTH_PORT", "0.0.0.0:70000", "a port is 1 to 65535, got 70000"),
    ("PRESSROOM_HEALTH_PORT", ":::8081", "an IPv6 host goes in brackets"),
])
def test_a_bad_value_is_one_line_naming_the_variable(variable: str, raw: str,
                                                     message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({variable: raw})
    text = str(caught.value)
    assert text.startswith(variable) and message in text and "\n" not in text


def _pressroom(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    ours = {variable.name for variable in VARIABLES} | {STORE_URL}
    base = {k: v for k, v in os.environ.items() if k not in ours}
    return subprocess.run([sys.executable, "pressroom.py", *args], cwd=REPO,
                          env={**base, **env, "COLUMNS": "200"}, capture_output=True,
                          text=True, timeout=60)


def test_the_cli_refuses_a_bad_value_in_one_line() -> None:
    proc = _pressroom("version", PRESSROOM_WORKER_GRACE_SECONDS="soon")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "PRESSROOM_WORKER_GRACE_SECONDS" in lines[0]
    assert "Traceback" not in proc.stderr


def test_the_cli_notes_the_deprecated_name_on_stderr(tmp_path: Path) -> None:
    proc = _pressroom("version", PRESSROOM_STORE_URL=f"sqlite+aiosqlite:///{tmp_path}/x.db")
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and f"{STORE_URL} is deprecated" in proc.stderr
    assert proc.stdout.strip()  # the version still printed


def _table_rows(path: Path, heading: str) -> tuple[str, dict[str, str]]:
    """The section of ``path`` under ``heading`` and its table rows by variable name."""
    text = (REPO / path).read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = {m.group(1): m.group(0)
            for m in re.finditer(r"^\| `((?:PRESSROOM|TEMPORAL)_[A-Z_]+)` \|.*$", section,
                                 re.MULTILINE)}
    return section, rows


def test_configuration_table_lists_every_setting() -> None:
    section, rows = _table_rows(Path("docs/configuration.md"), "## Environment variables")
    for v in VARIABLES:
        assert v.name in rows, v.name
        assert rows[v.name] == f"| `{v.name}` | {v.default} | {v.meaning} |"
    assert set(rows) == {v.name for v in VARIABLES}  # the product's settings, and only those
    assert STORE_URL in section


def test_tests_readme_lists_every_test_hook() -> None:
    section, rows = _table_rows(Path("tests/README.md"), "## Test and benchmark hooks")
    hooks = {"PRESSROOM_TEST_PAUSE_AT", "PRESSROOM_TEST_PAUSE_DIR", "PRESSROOM_TEST_FAIL_AT",
             "PRESSROOM_TEST_POSTGRES_URL", "PRESSROOM_BENCH_POSTGRES_URL", "PRESSROOM_CI",
             "PRESSROOM_UPDATE_GOLDEN", "PRESSROOM_FUZZ", "PRESSROOM_FAULTS",
             "PRESSROOM_SCALE", "PRESSROOM_CI_ARTIFACTS"}
    assert hooks <= set(rows)
    assert "`PRESSROOM_CHROMIUM`, `PRESSROOM_CHROMEDRIVER`" in section


def test_the_settings_module_imports_nothing_from_pressroom() -> None:
    source = Path(settings_module.__file__).read_text(encoding="utf-8")
    imported = set(re.findall(r"^(?:from|import) ([a-z_]+)", source, re.MULTILINE))
    assert imported <= {"__future__", "os", "warnings", "collections", "dataclasses",
                        "pathlib", "pydantic"}, imported


def test_roots_always_hold_pressrooms_own_folders_and_flags_replace_the_variable(
        tmp_path: Path) -> None:
    s = Settings.from_env({"PRESSROOM_HOME": "/srv/p", "PRESSROOM_SOURCE_ROOTS": "/docs",
                           "PRESSROOM_PUBLISH_ROOTS": "/out"})
    assert s.source_root_paths() == (Path("/srv/p"), Path("/srv/p/fixtures"), Path("/docs"))
    assert s.source_root_paths(Path("/job")) == (
        Path("/srv/p"), Path("/srv/p/fixtures"), Path("/docs"), Path("/job"))
    assert s.publish_root_paths() == (Path("/srv/p"), Path("/out"))
    flagged = s.with_roots(sources=[Path("/flag")], publish=None)
    assert flagged.source_roots == (Path("/flag"),) and flagged.publish_roots == (Path("/out"),)
    assert s.with_roots() is s
    # Pressroom's own state is never a job's path, even inside a root
    assert Path("/srv/p/keys") in s.private_paths
    assert Path("/srv/p/pressroom.db-wal") in s.private_paths
    assert s.console_accounts_dir == Path("/srv/p/console/accounts")
    assert Path("/srv/p/console") in s.private_paths  # the console's accounts and keys
    elsewhere = Settings.from_env({"PRESSROOM_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/s.db"})
    assert tmp_path / "s.db" in elsewhere.private_paths
    keyed = Settings.from_env({"PRESSROOM_ATTESTATION_KEYS": "/etc/pressroom/att.keys"})
    assert Path("/etc/pressroom/att.keys") in keyed.private_paths
