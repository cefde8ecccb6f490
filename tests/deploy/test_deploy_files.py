"""The deploy files are checked, not just written: every Kubernetes manifest against the
Kubernetes JSON schemas bundled in ``kubernetes-validate`` (strict: unknown fields fail),
``deploy/docker-compose.yml`` against the Compose specification's JSON schema (vendored in
``deploy/compose-spec/``, no PyPI package ships it) and, where the plugin exists,
``docker compose config``; the Dockerfile's final stage, ``.dockerignore``, and the wiring
between the files (Secrets and ConfigMaps referenced exist, the search-attribute command is
``workflows/visibility.py``'s, the one-shot services run what they say).

Each structural check is a function returning complaints, and each is also run on a broken
input to show that it can fail. Nothing here downloads anything or needs a container engine.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shlex
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "docker-compose.yml"
COMPOSE_SCHEMA = DEPLOY / "compose-spec" / "compose-spec.json"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"

#: Kubernetes release the manifests are validated for (schemas bundled in the package)
KUBERNETES_VERSIONS = ("1.30.0", "1.33.0")

#: images that must not be used: auto-setup is deprecated in favour of temporalio/server +
#: admin-tools; temporalio/web is the retired UI; tctl is the retired CLI
DEPRECATED_IMAGES = ("temporalio/auto-setup", "temporalio/web", "temporalio/tctl")


# --- Kubernetes ---------------------------------------------------------------------------


def k8s_documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc is not None:
                found.append((f"{path.name}#{index}:{doc.get('kind')}", doc))
    return found


DOCS = k8s_documents()


def test_the_k8s_folder_holds_what_the_brief_names() -> None:
    kinds = {doc["kind"] for _, doc in DOCS}
    assert {"Deployment", "ConfigMap", "Secret", "Job", "NetworkPolicy"} <= kinds
    assert (K8S / "README.md").is_file()


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize(("name", "doc"), DOCS, ids=[name for name, _ in DOCS])
def test_manifest_is_valid_for_kubernetes(name: str, doc: dict[str, Any], version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


def deployment() -> dict[str, Any]:
    return next(doc for _, doc in DOCS if doc["kind"] == "Deployment")


def test_kubernetes_schema_validation_can_fail() -> None:
    broken = copy.deepcopy(deployment())
    broken["spec"]["template"]["spec"]["containers"][0]["resources"]["limts"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)
    broken = copy.deepcopy(deployment())
    broken["spec"]["replicas"] = "three"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["template"]["spec"]
    return spec


def declared_port(container: dict[str, Any], port: int | str) -> int | None:
    """The container port a probe's ``port`` (a number or a port's name) names, when the
    container declares it."""
    for declared in container.get("ports", []):
        if port in (declared["containerPort"], declared.get("name")):
            number: int = declared["containerPort"]
            return number
    return None


def probe_complaints(container: dict[str, Any]) -> list[str]:
    """The worker's readiness probe is ``httpGet /readyz`` and its liveness probe (if any)
    ``httpGet /healthz``, each on a port the container declares."""
    complaints = []
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        if probe not in container:
            if probe == "readinessProbe":
                complaints.append("worker has no readiness probe")
            continue
        http = container[probe].get("httpGet")
        if http is None or http.get("path") != path:
            complaints.append(f"worker {probe} is not httpGet {path}")
        elif declared_port(container, http.get("port", 0)) is None:
            complaints.append(f"worker {probe} port {http.get('port')} is not declared")
    return complaints


def workload_complaints(doc: dict[str, Any]) -> list[str]:
    """A Deployment's or Job's pod runs non-root with limits on every container; a
    Deployment's worker has a readiness probe on ``/readyz`` (``probe_complaints``)."""
    complaints = []
    spec = pod_spec(doc)
    pod_security = spec.get("securityContext", {})
    if pod_security.get("runAsNonRoot") is not True:
        complaints.append("pod securityContext.runAsNonRoot is not true")
    if pod_security.get("runAsUser", 0) == 0:
        complaints.append("pod securityContext.runAsUser is root or unset")
    for container in spec.get("initContainers", []) + spec["containers"]:
        name = container["name"]
        security = container.get("securityContext", {})
        if security.get("allowPrivilegeEscalation") is not False:
            complaints.append(f"{name}: allowPrivilegeEscalation is not false")
        if security.get("runAsUser", pod_security.get("runAsUser", 0)) == 0:
            complaints.append(f"{name}: runs as root")
        if "ALL" not in security.get("capabilities", {}).get("drop", []):
            complaints.append(f"{name}: capabilities not dropped")
        resources = container.get("resources", {})
        for part in ("requests", "limits"):
            if not {"cpu", "memory"} <= set(resources.get(part, {})):
                complaints.append(f"{name}: no cpu/memory {part}")
    if doc["kind"] == "Deployment":
        complaints += probe_complaints(spec["containers"][0])
    return complaints


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_workloads_are_non_root_with_limits(kind: str) -> None:
    doc = next(doc for _, doc in DOCS if doc["kind"] == kind)
    assert workload_complaints(doc) == []


def test_workload_check_can_fail() -> None:
    broken = copy.deepcopy(deployment())
    spec = pod_spec(broken)
    spec["securityContext"]["runAsUser"] = 0
    del spec["containers"][0]["resources"]["limits"]
    del spec["containers"][0]["readinessProbe"]
    assert set(workload_complaints(broken)) == {
        "pod securityContext.runAsUser is root or unset", "attestation-key: runs as root",
        "worker: runs as root", "worker: no cpu/memory limits", "worker has no readiness probe"}


def test_probe_check_can_fail() -> None:
    broken = copy.deepcopy(deployment())
    worker = pod_spec(broken)["containers"][0]
    worker["readinessProbe"] = {"exec": {"command": ["python", "healthcheck.py"]}}
    worker["livenessProbe"]["httpGet"]["path"] = "/readyz"
    assert set(probe_complaints(worker)) == {"worker readinessProbe is not httpGet /readyz",
                                             "worker livenessProbe is not httpGet /healthz"}
    worker["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": "healthz"}}
    del worker["livenessProbe"]
    assert probe_complaints(worker) == ["worker readinessProbe port healthz is not declared"]


def test_the_probes_reach_the_port_the_worker_listens_on() -> None:
    """The ConfigMap's PRESSROOM_HEALTH_PORT / PRESSROOM_METRICS_PORT are what the worker
    reads (settings.py) and the ports the container declares; the probes use them."""
    from settings import Settings

    config = next(doc for _, doc in DOCS if doc["kind"] == "ConfigMap")["data"]
    settings = Settings.from_env(config)
    assert settings.health_address == ("0.0.0.0", 8081)
    worker = pod_spec(deployment())["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in worker["ports"]}
    assert ports == {"health": 8081, "metrics": settings.metrics_port}
    for probe in ("readinessProbe", "livenessProbe"):
        assert declared_port(worker, worker[probe]["httpGet"]["port"]) == 8081
    # liveness is the generous one: a restart needs minutes of silence, not seconds
    live = worker["livenessProbe"]
    assert live["periodSeconds"] * live["failureThreshold"] >= 120


def test_the_network_policy_lets_prometheus_scrape_the_metrics_port_only() -> None:
    policy = next(doc for _, doc in DOCS if doc["kind"] == "NetworkPolicy")
    metrics = int(next(doc for _, doc in DOCS if doc["kind"] == "ConfigMap")
                  ["data"]["PRESSROOM_METRICS_PORT"])
    rules = policy["spec"]["ingress"]
    assert [[p["port"] for p in rule["ports"]] for rule in rules] == [[metrics]]
    assert all(rule["from"] for rule in rules)  # from Prometheus, not from anywhere


def references(doc: dict[str, Any]) -> Iterator[tuple[str, str, str | None, bool]]:
    """``(kind, name, key, optional)`` of every ConfigMap/Secret a pod spec refers to."""
    spec = pod_spec(doc)
    for container in spec.get("initContainers", []) + spec["containers"]:
        for source in container.get("envFrom", []):
            for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                if field in source:
                    ref = source[field]
                    yield kind, ref["name"], None, ref.get("optional", False)
        for env in container.get("env", []):
            value_from = env.get("valueFrom", {})
            for field, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                if field in value_from:
                    ref = value_from[field]
                    yield kind, ref["name"], ref["key"], ref.get("optional", False)
    for volume in spec.get("volumes", []):
        if "secret" in volume:
            yield ("Secret", volume["secret"]["secretName"], None,
                   volume["secret"].get("optional", False))
        if "configMap" in volume:
            yield ("ConfigMap", volume["configMap"]["name"], None,
                   volume["configMap"].get("optional", False))


def test_every_secret_and_configmap_referenced_is_defined_with_its_key() -> None:
    defined = {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in DOCS}
    seen = set()
    for _, doc in DOCS:
        if doc["kind"] not in ("Deployment", "Job"):
            continue
        for kind, name, key, _optional in references(doc):
            seen.add((kind, name))
            assert (kind, name) in defined, f"{doc['kind']} refers to undefined {kind} {name}"
            target = defined[(kind, name)]
            if key is not None:
                keys = target.get("stringData") or target.get("data") or {}
                assert key in keys, (kind, name, key)
    # the brief: the store URL, the attestation keys and Temporal TLS/API key by reference
    assert {("Secret", "pressroom-store"), ("Secret", "pressroom-attestation"),
            ("Secret", "pressroom-temporal-tls"), ("Secret", "pressroom-temporal-api-key"),
            ("ConfigMap", "pressroom-config")} <= seen


def test_the_worker_reads_secrets_only_from_secrets() -> None:
    config = next(doc for _, doc in DOCS if doc["kind"] == "ConfigMap")["data"]
    assert not {"PRESSROOM_DATABASE_URL", "TEMPORAL_API_KEY", "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY"} & set(config)
    env = {e["name"]: e for e in pod_spec(deployment())["containers"][0]["env"]}
    assert "secretKeyRef" in env["PRESSROOM_DATABASE_URL"]["valueFrom"]
    assert "secretKeyRef" in env["TEMPORAL_API_KEY"]["valueFrom"]
    assert config["PRESSROOM_ATTESTATION_KEYS"].startswith("/run/pressroom/")


def test_the_secret_example_holds_placeholders_only() -> None:
    text = (K8S / "secret.example.yaml").read_text()
    assert "BEGIN" not in text and "PRIVATE KEY" not in text
    for _, doc in DOCS:
        if doc["kind"] == "Secret":
            assert "data" not in doc, "base64 data would hide what is in it"
            for key, value in (doc.get("stringData") or {}).items():
                assert "CHANGE_ME" in value or value.startswith("REPLACE_WITH"), key


def test_the_migrations_job_runs_the_store_upgrade() -> None:
    job = next(doc for _, doc in DOCS if doc["kind"] == "Job")
    command = pod_spec(job)["containers"][0]["command"]
    assert command[-3:] == ["pressroom", "db", "upgrade"]
    worker = pod_spec(deployment())["containers"][0]["command"]
    assert worker[-2:] == ["pressroom", "worker"]


def pressroom_commands() -> list[list[str]]:
    """Every ``pressroom …`` argv the manifests and the compose file run (commands and
    exec probes), without the leading ``tini --`` and ``pressroom``."""
    found = []
    argvs: list[list[str]] = []
    for _, doc in DOCS:
        if doc["kind"] in ("Deployment", "Job"):
            spec = pod_spec(doc)
            for container in spec.get("initContainers", []) + spec["containers"]:
                argvs.append(container.get("command", []))
                for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                    argvs.append(container.get(probe, {}).get("exec", {}).get("command", []))
    for service in compose()["services"].values():
        argvs.append(service.get("command") or [])
    for argv in argvs:
        if "pressroom" in argv:
            found.append(argv[argv.index("pressroom") + 1:])
    return found


def test_the_commands_the_deploy_files_run_exist() -> None:
    from typer.testing import CliRunner

    from pressroom import app

    commands = pressroom_commands()
    assert ["db", "upgrade"] in commands and ["worker"] in commands
    assert any(argv[:1] == ["doctor"] for argv in commands)
    runner = CliRunner()
    for argv in commands:
        # the options exactly as written, with --help so nothing runs
        result = runner.invoke(app, [*argv, "--help"])
        assert result.exit_code == 0, (argv, result.output)
    assert runner.invoke(app, ["doctor", "--no-such-option", "--help"]).exit_code != 0


# --- Compose ------------------------------------------------------------------------------


def deployed_worker_settings() -> dict[str, Any]:
    """Each deployed worker's settings as its own environment gives them: the Kubernetes
    Deployment's (its ConfigMap's data and its own ``env`` values), the Compose worker's
    and the systemd unit's (``worker.env.example``)."""
    from settings import Settings

    found: dict[str, Any] = {}
    configmaps = {doc["metadata"]["name"]: doc.get("data", {})
                  for _, doc in DOCS if doc["kind"] == "ConfigMap"}
    [worker] = [c for c in pod_spec(deployment())["containers"] if c["name"] == "worker"]
    env: dict[str, str] = {}
    for source in worker.get("envFrom", []):
        env.update(configmaps.get(source.get("configMapRef", {}).get("name"), {}))
    env.update({e["name"]: e["value"] for e in worker.get("env", []) if "value" in e})
    found["kubernetes"] = Settings.from_env(env)
    found["compose"] = Settings.from_env(
        {k: str(v) for k, v in compose()["services"]["worker"]["environment"].items()})
    lines = (DEPLOY / "worker.env.example").read_text().splitlines()
    found["systemd"] = Settings.from_env(dict(
        line.split("=", 1) for line in lines if line.strip() and not line.startswith("#")))
    return found


def test_every_deployed_worker_accepts_only_registered_reviewers() -> None:
    """SECURITY.md: in ``deploy/`` the worker accepts only reviewer keys its registry
    holds (``--registered-reviewers-only``), so whoever can start a job cannot choose its
    reviewers' keys."""
    for where, settings in deployed_worker_settings().items():
        assert settings.registered_reviewers_only, where


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def compose_schema_errors(data: dict[str, Any]) -> list[str]:
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(data)]


def test_compose_file_matches_the_compose_specification() -> None:
    assert compose_schema_errors(compose()) == []


def test_compose_schema_validation_can_fail() -> None:
    broken = compose()
    broken["services"]["worker"]["replica"] = 3          # not a service key
    broken["services"]["temporal"]["depends_on"]["temporal-schema"]["condition"] = "done"
    assert len(compose_schema_errors(broken)) >= 2


def test_vendored_compose_schema_records_its_source() -> None:
    notes = (DEPLOY / "compose-spec" / "README.md").read_text()
    assert "compose-spec/compose-spec" in notes and re.search(r"\b[0-9a-f]{40}\b", notes)
    assert "Apache License" in (DEPLOY / "compose-spec" / "LICENSE").read_text()
    assert json.loads(COMPOSE_SCHEMA.read_text())["title"] == "Compose Specification"


def image_complaints(data: dict[str, Any]) -> list[str]:
    complaints = []
    for name, service in data["services"].items():
        image = service.get("image")
        if image is None:
            complaints.append(f"{name}: no image")
            continue
        if any(image.startswith(old) for old in DEPRECATED_IMAGES):
            complaints.append(f"{name}: deprecated image {image}")
        repo, _, tag = image.rpartition(":")
        if not repo or "/" in tag or tag in ("", "latest"):
            complaints.append(f"{name}: image {image} not pinned to a tag")
    return complaints


def test_compose_images_are_pinned_and_current() -> None:
    assert image_complaints(compose()) == []
    images = {s["image"].split(":")[0] for s in compose()["services"].values()}
    assert {"temporalio/server", "temporalio/admin-tools", "temporalio/ui", "postgres"} <= images


def test_image_check_can_fail() -> None:
    broken = compose()
    broken["services"]["temporal"]["image"] = "temporalio/auto-setup:1.27.2"
    broken["services"]["temporal-ui"]["image"] = "temporalio/ui"
    broken["services"]["postgresql"]["image"] = "postgres:latest"
    assert len(image_complaints(broken)) == 3


def wiring_complaints(data: dict[str, Any]) -> list[str]:
    services = data["services"]
    complaints = []

    def condition(service: str, on: str) -> str | None:
        depends = services[service].get("depends_on", {})
        return depends.get(on, {}).get("condition") if isinstance(depends, dict) else None

    wanted = [("temporal-schema", "postgresql", "service_healthy"),
              ("temporal", "temporal-schema", "service_completed_successfully"),
              ("temporal-setup", "temporal", "service_healthy"),
              ("temporal-ui", "temporal", "service_healthy"),
              ("migrate", "postgresql", "service_healthy"),
              ("worker", "migrate", "service_completed_successfully"),
              ("worker", "temporal-setup", "service_completed_successfully")]
    for service, on, cond in wanted:
        if condition(service, on) != cond:
            complaints.append(f"{service} does not wait for {on} ({cond})")
    worker = services["worker"]
    if "container_name" in worker:
        complaints.append("worker has a container_name: replicas would collide")
    if worker.get("ports"):
        complaints.append("worker publishes host ports: replicas would collide")
    if not isinstance(worker.get("deploy", {}).get("replicas"), int):
        complaints.append("worker has no deploy.replicas")
    if "healthcheck" not in worker:
        complaints.append("worker has no healthcheck")
    for name in ("postgresql", "temporal"):
        if "healthcheck" not in services[name]:
            complaints.append(f"{name} has no healthcheck")
    if services["migrate"].get("command") != ["pressroom", "db", "upgrade"]:
        complaints.append("migrate does not run `pressroom db upgrade`")
    return complaints


def test_compose_services_wait_for_what_they_need() -> None:
    assert wiring_complaints(compose()) == []


def test_wiring_check_can_fail() -> None:
    broken = compose()
    broken["services"]["worker"]["container_name"] = "pressroom-worker"
    del broken["services"]["worker"]["depends_on"]["migrate"]
    broken["services"]["temporal"]["depends_on"] = ["temporal-schema"]
    assert len(wiring_complaints(broken)) == 3


def test_compose_bind_mounts_exist() -> None:
    for name, service in compose()["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name}: {source} missing"


def script_commands(path: Path) -> list[list[str]]:
    """The script's command lines, continuation lines joined, split like the shell."""
    text = path.read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [shlex.split(line, comments=True) for line in lines if line and not line.startswith("#")]


def test_temporal_schema_setup_covers_both_databases() -> None:
    text = (DEPLOY / "compose" / "temporal-schema.sh").read_text()
    assert "temporal:temporal temporal_visibility:visibility" in text
    for step in ("create", "setup-schema -v 0.0", "update-schema -d"):
        assert step in text, step
    service = compose()["services"]["temporal-schema"]
    assert service["image"].startswith("temporalio/admin-tools:")
    assert service["command"] == ["/pressroom-setup/temporal-schema.sh"]
    # the server and the schema tool come from the same release
    assert (service["image"].split(":")[1]
            == compose()["services"]["temporal"]["image"].split(":")[1])


def registered_search_attributes(path: Path, namespace: str) -> list[str]:
    """The ``temporal operator search-attribute create`` command of a setup script, with
    ``$NS`` read as ``namespace``."""
    for words in script_commands(path):
        if "search-attribute" in words and "create" in words:
            start = words.index("temporal")
            end = next((i + 1 for i, w in enumerate(words) if i >= start and w.endswith(";")),
                       len(words))     # `if ! temporal … ; then`: the command ends at ';'
            command = [w.rstrip(";") for w in words[start:end]]
            return [namespace if w == "$NS" else w for w in command if w]
    return []


def test_search_attribute_registration_is_visibility_create_command() -> None:
    from workflows.visibility import create_command

    namespace = compose()["services"]["temporal-setup"]["environment"]["PRESSROOM_NAMESPACE"]
    assert namespace == compose()["x-pressroom-env"]["PRESSROOM_TEMPORAL_NAMESPACE"]
    script = DEPLOY / "compose" / "temporal-namespace.sh"
    assert registered_search_attributes(script, namespace) == create_command(
        namespace=namespace).split()


def test_search_attribute_comparison_can_fail(tmp_path: Path) -> None:
    from workflows.visibility import create_command

    stale = tmp_path / "old.sh"
    stale.write_text(create_command(namespace="pressroom").replace(
        " --name PressroomReason --type Keyword", "") + "\n")
    assert registered_search_attributes(stale, "pressroom") != create_command(
        namespace="pressroom").split()


def docker_compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not docker_compose_available(),
                    reason="no `docker compose` plugin on this machine: the file is checked "
                           "against the Compose specification's JSON schema instead")
def test_docker_compose_config_accepts_the_file() -> None:
    result = subprocess.run(["docker", "compose", "-f", str(COMPOSE), "config", "--quiet"],
                            capture_output=True, text=True, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr


# --- Dockerfile and .dockerignore ---------------------------------------------------------


def dockerfile_stages(text: str) -> list[list[tuple[str, str]]]:
    """``[(INSTRUCTION, arguments), …]`` per stage (instructions before the first FROM,
    i.e. global ARGs, are dropped); continuation lines joined, comments skipped."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    stages: list[list[tuple[str, str]]] = []
    for line in logical:
        instruction, _, arguments = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((instruction, arguments.strip()))
    return stages


#: packages that make a compiler toolchain
COMPILERS = re.compile(r"\b(build-essential|gcc|g\+\+|clang|make|cargo|rustc)\b")


def dockerfile_complaints(text: str) -> list[str]:
    stages = dockerfile_stages(text)
    complaints = []
    if len(stages) < 2:
        complaints.append("not multi-stage")
    final = stages[-1] if stages else []
    users = [args for instruction, args in final if instruction == "USER"]
    if not users:
        complaints.append("final stage has no USER: runs as root")
    else:
        user = users[-1].split(":")[0]
        if user in ("0", "root"):
            complaints.append(f"final stage runs as {users[-1]}")
    for instruction, args in final:
        if instruction == "RUN" and "install" in args and COMPILERS.search(args):
            complaints.append(f"final stage installs a compiler: {args[:60]}")
    if not any(i == "COPY" and args.startswith("--from=") for i, args in final):
        complaints.append("final stage copies nothing from a build stage")
    return complaints


def test_dockerfile_final_stage_is_slim_and_non_root() -> None:
    assert dockerfile_complaints(DOCKERFILE.read_text()) == []


def test_dockerfile_check_can_fail() -> None:
    text = DOCKERFILE.read_text()
    assert dockerfile_complaints(text.replace("USER 10001:10001", "USER root")) != []
    assert dockerfile_complaints(text.replace("USER 10001:10001\n", "")) != []
    assert dockerfile_complaints(text.replace(
        "git tini", "git tini build-essential")) != []
    one_stage = "FROM python:3.11-slim\nCOPY . /src\nRUN pip install /src\n"
    assert len(dockerfile_complaints(one_stage)) == 3


def test_dockerfile_health_check_script_is_copied_and_exists() -> None:
    final = dockerfile_stages(DOCKERFILE.read_text())[-1]
    healthchecks = [args for instruction, args in final if instruction == "HEALTHCHECK"]
    assert healthchecks and "/usr/local/lib/pressroom/healthcheck.py" in healthchecks[0]
    assert any(i == "COPY" and "deploy/healthcheck.py" in a for i, a in final)
    assert (DEPLOY / "healthcheck.py").is_file()
    # the image turns the endpoint on, on every interface, and the script asks it
    env = " ".join(a for i, a in final if i == "ENV")
    assert "PRESSROOM_HEALTH_PORT=0.0.0.0:8081" in env
    assert ("EXPOSE", "8081") in final


def dockerignore_excludes(text: str, path: str) -> bool:
    """Whether ``path`` (relative to the context) is left out, by Docker's rules: the
    last matching pattern wins, ``!`` re-includes, a pattern matching a directory leaves
    out what is under it."""
    import fnmatch

    excluded = False
    parts = path.split("/")
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            if fnmatch.fnmatchcase(prefix, pattern) or (
                    pattern.startswith("**/") and fnmatch.fnmatchcase(prefix.rsplit("/", 1)[-1],
                                                                      pattern[3:])):
                excluded = not negate
                break
    return excluded


@pytest.mark.parametrize("path", [".venv/bin/python", ".git/HEAD", "reports/faults.md",
                                  ".pytest_cache/v/cache", "activities/__pycache__/x.pyc",
                                  ".env", "client.key", "client.pem"])
def test_dockerignore_leaves_out(path: str) -> None:
    assert dockerignore_excludes(DOCKERIGNORE.read_text(), path)


@pytest.mark.parametrize("path", ["pyproject.toml", "README.md", "worker.py",
                                  "activities/__init__.py", "deploy/healthcheck.py",
                                  "examples/job.yaml"])
def test_dockerignore_keeps_what_the_build_needs(path: str) -> None:
    assert not dockerignore_excludes(DOCKERIGNORE.read_text(), path)


def test_dockerignore_check_can_fail() -> None:
    text = DOCKERIGNORE.read_text()
    assert not dockerignore_excludes(text.replace(".venv\n", ""), ".venv/bin/python")
    assert not dockerignore_excludes(text + "!.git\n", ".git/HEAD")


# --- deploy/healthcheck.py ----------------------------------------------------------------


def healthcheck_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deploy_healthcheck",
                                                  DEPLOY / "healthcheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_healthcheck_passes_when_dependencies_listen_and_fails_when_not() -> None:
    health = healthcheck_module()
    with socket.socket() as temporal, socket.socket() as postgres:
        for sock in (temporal, postgres):
            sock.bind(("127.0.0.1", 0))
            sock.listen()
        env = {"PRESSROOM_TEMPORAL_ADDRESS": f"127.0.0.1:{temporal.getsockname()[1]}",
               "PRESSROOM_DATABASE_URL": "postgresql+asyncpg://u:s3cret@127.0.0.1:"
                                         f"{postgres.getsockname()[1]}/pressroom"}
        assert health.check(env, timeout=2) == []
    env = {"TEMPORAL_ADDRESS": f"127.0.0.1:{closed_port()}",
           "PRESSROOM_DATABASE_URL": f"postgresql+asyncpg://u:s3cret@127.0.0.1:{closed_port()}/db"}
    failures = health.check(env, timeout=2)
    assert len(failures) == 2 and "Temporal frontend" in failures[0]
    assert not any("s3cret" in line for line in failures)
    # a SQLite store has no server to reach
    assert [t[0] for t in health.targets({"PRESSROOM_DATABASE_URL": "sqlite+aiosqlite:///x"})] \
        == ["Temporal frontend"]


@pytest.mark.parametrize(("value", "url"), [
    (None, None), ("8081", "http://127.0.0.1:8081/readyz"),
    ("0.0.0.0:8081", "http://127.0.0.1:8081/readyz"), ("[::]:9000", "http://[::1]:9000/readyz"),
    ("10.0.0.5:8081", "http://10.0.0.5:8081/readyz")])
def test_healthcheck_asks_the_endpoint_the_worker_serves(value: str | None,
                                                         url: str | None) -> None:
    env = {} if value is None else {"PRESSROOM_HEALTH_PORT": value}
    assert healthcheck_module().readyz_url(env) == url


@pytest.mark.asyncio(loop_scope="session")
async def test_healthcheck_passes_only_while_readyz_answers_200() -> None:
    import asyncio

    from cli.health import HealthState, start_health_server

    health = healthcheck_module()
    state = HealthState()
    server = await start_health_server(state, "127.0.0.1", 0)
    env = {"PRESSROOM_HEALTH_PORT": f"127.0.0.1:{server.port}",
           # the endpoint decides: an unreachable Temporal is not asked
           "PRESSROOM_TEMPORAL_ADDRESS": f"127.0.0.1:{closed_port()}"}
    try:
        assert await asyncio.to_thread(health.check, env) == [
            "worker not ready: /readyz answered 503"]
        state.started = True
        assert await asyncio.to_thread(health.check, env) == []
        state.draining = True
        assert await asyncio.to_thread(health.check, env) == [
            "worker not ready: /readyz answered 503"]
    finally:
        await server.close()
    failures = await asyncio.to_thread(health.check, env, 2)
    assert len(failures) == 1 and "unreachable" in failures[0]
