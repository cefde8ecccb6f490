"""The ``pressroom`` strategy: a case through the real engine (``context.assemble``).

The case becomes an ``AssemblyRequest`` (``mapping`` builds the items; every candidate is
acquired ``retrieved`` from the fixed file; required topics become ``TopicSpec`` with the
topic name, its words and the case's ``topic_terms`` as terms (``topics.topic_spec``);
``budget`` becomes ``evidence_budget``; a fixed control-policy item and a task item
carrying the question are added, because the engine blocks a step without them by design —
they are not lab sources and are never graded as evidence; the case's ``policy`` overrides
are deep-merged into the chosen policy and re-validated, so the manifest names the digest
actually used). The packet is then read back from the sealed manifest and the serialized
OpenAI Chat payload — what the model would really receive — never from the engine's
intermediate state.

Trust is the engine's decision (docs/context-engine.md#untrusted-lab-sources): every
candidate reaches the engine, none is filtered here. A lab-``untrusted`` source is mapped
to the engine's ``unvetted_external_data`` (``mapping``) and the policy decides; under the
shipped policies the trust-role gate refuses it. Every exclusion in the packet is one the
engine made, with its gate and detail, and every candidate's acquisition outcome is the
one the manifest records.
"""

from __future__ import annotations

import json
from typing import Any

import context
from context import (
    AssemblyRequest,
    ContextError,
    ContextItem,
    ContextPolicy,
    ModelSpec,
    PrincipalContext,
    Role,
    ScopeRef,
    SecurityClass,
    SourceAcquisition,
    SourceType,
    ToolCall,
    ToolDefinition,
    ToolHistory,
    ToolResult,
    Trust,
    count_tokens,
    parse_data_blocks,
    policy_from_mapping,
)
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.errors import DatasetError, StrategyError
from evals.context_lab.mapping import acquisition_id, case_scope, security_class, source_to_item
from evals.context_lab.packet import (
    AcquisitionEntry,
    AnomalyRecord,
    ExcludedEntry,
    ManifestRef,
    Packet,
    SelectedEntry,
    ToolEvent,
    VisibleMessage,
    fingerprint,
)
from evals.context_lab.topics import topic_spec
from evals.context_lab.zones import block_spans

STRATEGY = "pressroom"
LAB_MODEL = ModelSpec(provider="lab", name="context-lab", context_limit=128_000)
LAB_PRINCIPAL = "context-lab-agent"
CONTROL_TEXT = (
    "You are Pressroom's research agent. Answer only from the admitted evidence below, cite "
    "each claim by its source, and say plainly when evidence is missing."
)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def case_policy(case: LabCase, policy: ContextPolicy, cases_path: str) -> ContextPolicy:
    if not case.policy:
        return policy
    data = policy.model_dump(mode="json")
    data["policy"].pop("digest", None)
    try:
        return policy_from_mapping(_merge(data, case.policy), origin=f"case {case.id}")
    except ContextError as exc:
        raise DatasetError(cases_path, str(exc), field=f"{case.id}.policy") from None


def tool_history(case: LabCase) -> tuple[ToolHistory, tuple[ToolDefinition, ...]]:
    calls = [ToolCall(call_id=e.call_id, tool_name=e.tool_name, arguments=e.arguments,
                      turn=e.turn) for e in case.tool_history if e.type == "call"]
    results = [ToolResult(call_id=e.call_id, tool_name=e.tool_name, status=e.status,
                          content=e.content, arrival=i)
               for i, e in enumerate(case.tool_history) if e.type == "result"]
    names = sorted({e.tool_name for e in case.tool_history})
    defs = tuple(ToolDefinition(name=n, description=f"lab tool {n}") for n in names)
    return ToolHistory(calls=tuple(calls), results=tuple(results)), defs


def contract_items(case: LabCase, scope: ScopeRef) -> list[ContextItem]:
    """The control policy and task contract every step needs (the engine blocks without)."""
    common = {"producer": "context-lab", "observed_at": case.as_of,
              "security_class": SecurityClass.PUBLIC}
    return [
        ContextItem.build(item_id="lab-control-policy", source_type=SourceType.SYSTEM_POLICY,
                          content=CONTROL_TEXT, trust=Trust.CONTROL_AUTHORITY,
                          intended_role=Role.CONTROL,
                          scope=ScopeRef(tenant=scope.tenant, project=scope.project), **common),
        ContextItem.build(item_id=f"lab-task-{case.id}", source_type=SourceType.USER_REQUEST,
                          content=f"Task: {case.question}", trust=Trust.TASK_AUTHORITY,
                          intended_role=Role.TASK_INTENT, scope=scope, **common),
    ]


def build_request(case: LabCase, sources: dict[str, LabSource], *, budget: int,
                  policy: ContextPolicy) -> AssemblyRequest:
    scope = case_scope(case)
    items = contract_items(case, scope) + [source_to_item(sources[s], policy, as_of=case.as_of)
                                           for s in case.candidate_source_ids]
    acquisitions = [SourceAcquisition(source_request_id=acquisition_id(i.item_id),
                                      source_type=i.source_type.value, source_id=i.item_id,
                                      revision=i.revision, outcome="retrieved",
                                      result_digest=i.content_hash) for i in items]
    history, defs = tool_history(case)
    return AssemblyRequest(
        run_id=f"context-lab-{case.id}", step_id="assemble", stage="research",
        as_of=case.as_of,
        principal=PrincipalContext(principal_id=case.principal or LAB_PRINCIPAL,
                                   clearance=security_class(case.clearance), scope=scope),
        scope=scope, policy=policy, model=LAB_MODEL, adapter="openai_chat",
        question=case.question, decision=case.question,
        required_topics=tuple(topic_spec(case, t) for t in case.required_topics),
        required_revisions=dict(case.required_revisions), candidates=tuple(items),
        acquisitions=tuple(acquisitions), tool_history=history, tool_definitions=defs,
        evidence_budget=budget,
    )


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p)
                         for p in content)
    return json.dumps(content, sort_keys=True)


def visible_messages(payload: dict[str, Any]) -> tuple[list[VisibleMessage], list[ToolEvent]]:
    """Messages and tool events of an OpenAI Chat payload, in order."""
    messages: list[VisibleMessage] = []
    events: list[ToolEvent] = []
    for index, m in enumerate(payload.get("messages", [])):
        role = str(m.get("role"))
        text = _text(m.get("content"))
        for call in m.get("tool_calls") or []:
            events.append(ToolEvent(kind="call", call_id=str(call.get("id")), message=index))
            fn = call.get("function", {})
            text += f"\n{fn.get('name')}({fn.get('arguments')})"
        if role == "tool":
            events.append(ToolEvent(kind="result", call_id=str(m.get("tool_call_id")),
                                    message=index))
        messages.append(VisibleMessage(role=role, text=text))
    return messages, events


def block_tokens(rendered: str) -> dict[str, int]:
    """Tokens of each evidence block as rendered (the unit ``evidence_budget`` counts).

    The manifest's ``included[].tokens`` is the whole chat message (with framing); the
    evidence budget counts the data block alone, so the packet reports that.
    """
    views = parse_data_blocks(rendered)
    spans = block_spans(rendered)
    return {v.item_id: count_tokens(rendered[a:b]) for v, (a, b) in zip(views, spans, strict=True)}


def _locator(ref: dict[str, Any]) -> str | None:
    """Where the included item points: its locator, url, or code citation (excerpts)."""
    if ref.get("locator") or ref.get("url"):
        return str(ref.get("locator") or ref.get("url"))
    if ref.get("repo") and ref.get("commit") and ref.get("path"):
        lines = f"#L{ref['line_start']}-L{ref['line_end']}" if ref.get("line_start") else ""
        return f"{ref['repo']}@{ref['commit']}:{ref['path']}{lines}"
    return None


def _source_id(entry: Any, candidate_ids: set[str]) -> str | None:
    """The lab source an included item carries (itself, or the origin of a derived copy)."""
    if entry.item_id in candidate_ids:
        return str(entry.item_id)
    for node in entry.source_lineage:
        if node.get("node_id") in candidate_ids:
            return str(node["node_id"])
    return None


def run_pressroom(case: LabCase, sources: dict[str, LabSource], *, budget: int,
                  policy: ContextPolicy, cases_path: str = "cases") -> Packet:
    used_policy = case_policy(case, policy, cases_path)
    request = build_request(case, sources, budget=budget, policy=used_policy)
    try:
        outcome = context.assemble(request)
    except ContextError as exc:
        raise StrategyError(f"case {case.id}: the engine raised {type(exc).__name__}: "
                            f"{exc}") from exc
    manifest = outcome.manifest
    candidate_ids = set(case.candidate_source_ids)
    rendered = outcome.rendered_evidence if isinstance(outcome, context.Ready) else ""
    tokens = block_tokens(rendered)
    selected: list[SelectedEntry] = []
    # the document's own date as the engine recorded it (else when it was read)
    observed = {c.item_id: c.source_date or c.observed_at for c in manifest.candidate_items}
    for inc in manifest.included:
        sid = _source_id(inc, candidate_ids)
        if sid is None:
            continue
        # what the engine recorded, not what the lab knows: traceability grades the record
        selected.append(SelectedEntry(
            id=sid, tokens=tokens.get(inc.item_id, inc.tokens), item_id=inc.item_id,
            locator=_locator(inc.source_ref),
            updated_at=observed.get(inc.item_id) or observed.get(sid),
            content_hash=inc.content_hash))
    excluded = [ExcludedEntry(id=e.item_id, reason=e.reason.value, gate=e.hard_gate,
                              detail=e.detail)
                for e in manifest.excluded if e.item_id in candidate_ids]
    outcomes = {a.source_request_id: a.outcome.value for a in manifest.source_acquisition}
    acquisitions = [AcquisitionEntry(id=s, outcome=o) for s in case.candidate_source_ids
                    if (o := outcomes.get(acquisition_id(s))) is not None]
    messages, events = (visible_messages(outcome.serialized.payload)
                        if isinstance(outcome, context.Ready) else ([], []))
    policy_ref = manifest.policy.model_dump(mode="json")
    return Packet(
        case_id=case.id, strategy=STRATEGY, status=manifest.status,
        selected=tuple(selected), excluded=tuple(excluded),
        missing_topics=tuple(manifest.missing_topics),
        budget_used=manifest.budget.evidence_block_tokens, budget_limit=budget,
        acquisitions=tuple(acquisitions), messages=tuple(messages), tool_events=tuple(events),
        anomalies=tuple(AnomalyRecord(type=a.type.value, call_id=a.call_id)
                        for a in manifest.tool_anomalies),
        rendered_context=rendered,
        manifest=ManifestRef(
            manifest_id=manifest.manifest_id, status=manifest.status,
            blocked_reason=manifest.blocked_reason.value if manifest.blocked_reason else None,
            policy=policy_ref, candidate_set_digest=manifest.candidate_set_digest,
            assembly_input_hash=manifest.assembly_input_hash,
            serialized_model_input_hash=manifest.serialized_model_input_hash),
        fingerprint=fingerprint(strategy=STRATEGY, case_id=case.id,
                                as_of=case.as_of.isoformat(),
                                selected=[(s.id, s.content_hash) for s in selected],
                                policy=policy_ref),
    )
