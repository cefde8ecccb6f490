"""The extractive provider on a request assembled by the real context engine.

Candidates are the evidence of notes citing the example job's research tool calls (see
conftest) plus the task contract; ``context.assemble`` gates, budgets, renders and
serializes them. The draft must
cite only what the engine admitted and list the topics the engine reported missing.
"""

from __future__ import annotations

import re

import context
from activities.candidates import render_job_spec
from activities.providers import get_provider
from activities.providers.passages import quote_matches
from context.items import ContextItem, ScopeRef
from context.request import ModelSpec, PrincipalContext, TopicSpec
from context.seal.render import parse_data_blocks
from context.tool_history import ToolHistory
from context.vocabulary import Role, SecurityClass, SourceType, Trust
from contracts.job_spec import load_job_spec
from tests.providers.conftest import AS_OF, ROOT, SCOPE, BuiltRequest

FINDING = re.compile(r'^- "(?P<quote>.+)" — `(?P<cite>[^`]+)`')


def _request(built: BuiltRequest) -> object:
    spec = load_job_spec(ROOT / "examples" / "job.yaml")
    scope = ScopeRef(tenant=SCOPE.tenant, project=SCOPE.project, task=SCOPE.task)
    control = ContextItem.build(
        item_id="pressroom:control-policy", source_type=SourceType.SYSTEM_POLICY,
        producer="runtime", content="Write only what admitted evidence supports.",
        scope=scope, trust=Trust.CONTROL_AUTHORITY, intended_role=Role.CONTROL,
        revision="1", required=True, security_class=SecurityClass.PUBLIC,
    )
    task = ContextItem.build(
        item_id=f"job_spec:{spec.job_id}", source_type=SourceType.USER_REQUEST,
        producer="runtime", content=render_job_spec(spec), scope=scope,
        trust=Trust.TASK_AUTHORITY, intended_role=Role.TASK_INTENT, revision="1", required=True,
    )
    topics = [TopicSpec(name=t.name, terms=tuple(t.terms)) for t in spec.topics]
    topics.append(TopicSpec(name="tls_pinning", terms=("certificate pinning",)))
    return context.AssemblyRequest(
        run_id=spec.job_id, step_id="draft-1", stage="draft", as_of=AS_OF,
        principal=PrincipalContext(principal_id=spec.principal.principal_id,
                                   clearance=spec.principal.clearance, scope=scope),
        scope=scope, policy=context.load_policy("default"),
        model=ModelSpec(provider="extractive", name="extractive-v1", context_limit=32_000),
        adapter="openai_chat", question=spec.question,
        decision="draft the article from admitted evidence, one citation per claim",
        required_topics=tuple(topics),
        candidates=(control, task, *built.data_items),
        tool_history=ToolHistory(calls=built.calls, results=built.results),
    )


async def test_draft_from_an_engine_assembled_request(built: BuiltRequest) -> None:
    outcome = context.assemble(_request(built))  # type: ignore[arg-type]
    assert isinstance(outcome, context.Ready), getattr(outcome, "blocked_reason", None)
    payload = outcome.serialized.payload
    result = await get_provider("extractive").complete(
        payload, adapter=outcome.serialized.adapter, purpose="draft"
    )
    again = await get_provider("extractive").complete(
        payload, adapter=outcome.serialized.adapter, purpose="draft"
    )
    assert result.text == again.text
    blocks = []
    for m in payload["messages"]:
        if isinstance(m.get("content"), str):
            blocks += parse_data_blocks(m["content"])
    findings = [m for line in result.text.splitlines() if (m := FINDING.match(line))]
    assert findings, result.text
    for f in findings:
        # verbatim up to line wrapping, inside one admitted block
        assert any(quote_matches(f.group("quote"), b.content.split("\n")) for b in blocks), \
            f.group(0)
    missing = result.text.split("## Missing evidence", 1)[1].split("## Open items", 1)[0]
    assert "- tls_pinning: no admitted evidence" in missing
    assert "skip human approval" not in result.text.lower()
