"""``decide``: one research turn's model call, on exactly the request the manifest sealed.

Like ``draft`` it never rebuilds the prompt: it loads the serialized request stored with the
manifest, checks it against the sealed hash and hands those bytes — tool definitions
included — to the provider's ``decide``. The reply is stored before anything else happens,
as a ``model_decision`` artifact per turn written with the step id as its write id; a retry
after a crash finds it and returns the same calls without calling the model again, so a
paid call is made at most once per turn and the tool calls that follow are the same ones.

What comes back to the workflow is the reply turned into ``PlannedCall``s: each gets the
runtime's own call id (``t<turn>-<n>``, short enough for every provider's id pattern and
unique in the job, whatever ids the provider used — those are kept in the stored reply).
The reply is untrusted input, so nothing in it can fail the turn: arguments that are not a
JSON object, a tool name that is too long, arguments over the size that may travel in
history each become a call with a ``refusal`` that the tool activity records as a typed
error result the model sees next turn; the calls past the turn's limit become one such
refused call that says how many were not run. Secrets in a call's arguments are redacted
(``context.admission.security``) before the call travels anywhere: only the stored reply
keeps them as the provider sent them.

Prompt caching is measured here (docs/context-engine.md#prompt-cache-identity): the stored
reply's ``usage`` keeps the provider's cached and cache-write input tokens beside the
engine's own count of the cacheable prefix (``cacheable_prefix_tokens``, from the sealed
manifest), and the manifest's usage row gets them too. The offline provider has no cache;
it reports what a prefix cache would have served: the tokens of the byte-identical prefix
this request shares with the job's previous turn's request.

Each call is priced here, by the worker's price table (``contracts.pricing``;
docs/configuration.md#cost-in-money), and its cost in whole micro-dollars is stored in the reply's
``usage`` and returned: the workflow only adds these integers against the job's cost
budget, and a retry returns the cost stored with the reply. A job with a cost budget whose
model this worker has no price for is refused before the model is called (a paid call that
cannot be counted is not made).
"""

from __future__ import annotations

import json
from typing import Any

from activities.draft import load_serialized, require_ready
from activities.mcp.approvals import mark_write_calls
from activities.providers import provider_for
from activities.providers.base import ProviderDecision
from activities.runtime import ActivityRuntime, dumps, pause_point, principal_of, put_once, ref_of
from activities.telemetry import emit, now_ns
from artifacts import Store, content_hash
from context import default_counter, get_adapter, redact_arguments, shared_prefix_tokens
from contracts.activity_messages import (
    MAX_TOOL_ARGUMENT_CHARS,
    DecideInput,
    DecideResult,
    PlannedCall,
)
from contracts.errors import ProviderConfigError
from contracts.pricing import PriceTable, call_cost

#: the provider with no prompt cache of its own (activities/providers/__init__.py)
OFFLINE = "extractive"
#: the longest tool name passed on as asked (longer ones are refused as unknown)
_MAX_TOOL_NAME = 64


def decision_id(job_id: str, turn: int) -> str:
    return f"{job_id}.turn.{turn:04d}"


def call_id(turn: int, index: int) -> str:
    """The runtime's id of the ``index``-th call (1-based) of ``turn``."""
    return f"t{turn:04d}-{index}"


def plan_calls(decision: ProviderDecision, turn: int, max_calls: int) -> list[PlannedCall]:
    """The reply's tool calls as the loop runs them; every oddity becomes a refusal."""
    planned: list[PlannedCall] = []
    asked = len(decision.tool_calls)
    # one refused call stands for all past the limit: every call the loop runs is an
    # activity in history, so a reply with thousands of calls must not become thousands
    for index, proposed in enumerate(decision.tool_calls[:max_calls + 1], start=1):
        name = proposed.name[:_MAX_TOOL_NAME]
        arguments: dict[str, Any] = proposed.arguments
        refusal: str | None = None
        if len(proposed.name) > _MAX_TOOL_NAME:
            refusal = f"unknown_tool: the tool name is {len(proposed.name)} characters long"
        elif proposed.malformed is not None:
            refusal = "malformed_arguments: the arguments are not a JSON object"
        elif len(json.dumps(arguments, default=str)) > MAX_TOOL_ARGUMENT_CHARS:
            refusal = (f"arguments_over_limit: the arguments are over "
                       f"{MAX_TOOL_ARGUMENT_CHARS} characters of JSON")
        elif index > max_calls:
            refusal = (f"too_many_calls: {asked} tool calls asked, at most {max_calls} per "
                       f"turn; calls {max_calls + 1} to {asked} were not run")
        if refusal is not None:
            arguments = {}
        else:
            # a secret in the arguments (a token in a repository URL) must not travel in
            # workflow history, the stored exchange or the next turns' requests; the raw
            # reply stays in the model_decision artifact only
            scan = redact_arguments(arguments)
            arguments = arguments if scan is None else scan.arguments
        planned.append(PlannedCall(call_id=call_id(turn, index), tool_name=name,
                                   arguments=arguments, refusal=refusal))
    return planned


def _result(record: Any, body: dict[str, Any]) -> DecideResult:
    usage = body["usage"]
    return DecideResult(decision=ref_of(record),
                        calls=[PlannedCall.model_validate(c) for c in body["planned"]],
                        input_tokens=usage["input_tokens"], output_tokens=usage["output_tokens"],
                        text_chars=len(body["text"]),
                        cached_input_tokens=usage.get("cached_input_tokens") or 0,
                        cache_write_input_tokens=usage.get("cache_write_input_tokens") or 0,
                        cost_micro_usd=usage.get("cost_micro_usd"))


def _consistent(decision: ProviderDecision) -> ProviderDecision:
    """The cache figures as parts of the input (a reply claiming more cached than input
    tokens is untrusted input, not a reason to fail the turn): each capped to what is left."""
    total = decision.input_tokens or 0
    cached = decision.cached_input_tokens
    written = decision.cache_write_input_tokens
    if cached is not None:
        cached = min(cached, total)
    if written is not None:
        written = min(written, total - (cached or 0))
    return decision.model_copy(update={"cached_input_tokens": cached,
                                       "cache_write_input_tokens": written})


async def _previous_request(store: Store, spec: Any, turn: int) -> dict[str, Any] | None:
    """The payload the job's previous turn sent (verified against its sealed hash), or
    ``None`` on the first turn."""
    previous: dict[str, Any] | None = None
    if turn > 1:
        head = await store.head("model_decision", decision_id(spec.job_id, turn - 1),
                                principal=principal_of(spec))
        if head is not None:
            _, raw = await store.get("model_decision", decision_id(spec.job_id, turn - 1),
                                     principal=principal_of(spec), revision=head.revision)
            before = json.loads(raw)
            previous = (await load_serialized(store, spec, before["manifest_id"],
                                              before["input_hash"]))["payload"]
    return previous


def priced_usage(prices: PriceTable, provider: str, model: str,
                 usage: dict[str, Any]) -> dict[str, Any]:
    """``usage`` (a reply's stored token counts) with ``cost_micro_usd`` when ``model`` has a
    price; the cached and cache-write counts are 0 when the provider reported none
    (activities/providers/base.py says what each count holds)."""
    price = prices.price_of(provider, model)
    if price is None:
        return usage
    cost = call_cost(price, input_tokens=int(usage.get("input_tokens") or 0),
                     output_tokens=int(usage.get("output_tokens") or 0),
                     cached_input_tokens=int(usage.get("cached_input_tokens") or 0),
                     cache_write_input_tokens=int(usage.get("cache_write_input_tokens") or 0))
    return {**usage, "cost_micro_usd": cost}


async def decide(runtime: ActivityRuntime, inp: DecideInput) -> DecideResult:
    store = await runtime.store()
    spec, ctx = await runtime.spec_of(inp.job), inp.context
    require_ready(ctx)
    principal = principal_of(spec)
    artifact_id = decision_id(spec.job_id, inp.turn)
    head = await store.head("model_decision", artifact_id, principal=principal)
    if head is not None:  # a retry: the reply is stored, the model is not asked twice
        _, raw = await store.get("model_decision", artifact_id, principal=principal,
                                 revision=head.revision)
        return _result(head, json.loads(raw))
    if (spec.research.cost_budget_usd is not None
            and runtime.prices.price_of(spec.model.provider, spec.model.name) is None):
        raise ProviderConfigError(
            f"no price for model {spec.model.provider}/{spec.model.name} in this worker's "
            f"price table, {runtime.prices.describe}; the job has a cost budget: add the "
            "model to the file PRESSROOM_PRICES names, restart the worker and retry")
    serialized = await load_serialized(store, spec, ctx.manifest_id, ctx.input_hash)
    await pause_point("decide")
    provider = provider_for(spec.model, runtime.endpoints)
    started = now_ns()
    decision = await provider.decide(serialized["payload"], adapter=serialized["adapter"])
    if provider.name == OFFLINE and decision.cached_input_tokens is None:
        # no cache offline: report what a prefix cache holding the last request would serve
        shared = shared_prefix_tokens(await _previous_request(store, spec, inp.turn),
                                      serialized["payload"], default_counter(),
                                      get_adapter(serialized["adapter"]))
        decision = decision.model_copy(update={
            "cached_input_tokens": min(shared, decision.input_tokens or 0),
            "cache_write_input_tokens": 0})
    emit("model_call", started, provider=spec.model.provider, operation="decide",
         model=spec.model.name, response_model=decision.model,
         input_tokens=decision.input_tokens, output_tokens=decision.output_tokens,
         job_id=spec.job_id, step_id=ctx.step_id, manifest_id=ctx.manifest_id)
    decision = _consistent(decision)
    planned = plan_calls(decision, inp.turn, spec.research.max_calls_per_turn)
    # a call of an ``effect: write`` MCP tool waits for a signed approval (docs/mcp.md)
    planned = await mark_write_calls(store, spec, planned)
    body = {
        "turn": inp.turn, "manifest_id": ctx.manifest_id, "input_hash": serialized["hash"],
        "provider": decision.provider, "model": decision.model,
        "stop_reason": decision.stop_reason, "text": decision.text,
        "tool_calls": [c.model_dump(mode="json") for c in decision.tool_calls],
        "planned": [c.model_dump(mode="json") for c in planned],
        "usage": {"input_tokens": decision.input_tokens or 0,
                  "output_tokens": decision.output_tokens or 0,
                  "cached_input_tokens": decision.cached_input_tokens,
                  "cache_write_input_tokens": decision.cache_write_input_tokens,
                  "cacheable_prefix_tokens": serialized["cache"].get("cacheable_prefix_tokens")},
    }
    # priced from the usage as stored, so the cost and the counts it was made from agree
    body["usage"] = priced_usage(runtime.prices, spec.model.provider, spec.model.name,
                                 body["usage"])
    emit("model_cost", started, provider=spec.model.provider, operation="decide",
         cost_micro_usd=body["usage"].get("cost_micro_usd"))
    raw = dumps(body)
    await pause_point("decide_before_write")
    record = await put_once(store, "model_decision", artifact_id, raw, spec=spec,
                            trust="untrusted_external_data", parent_revision=None,
                            write_id=ctx.step_id, metadata={"manifest_id": ctx.manifest_id})
    if record.content_hash != content_hash(raw):  # another attempt's reply won: use it
        _, stored = await store.get("model_decision", artifact_id, principal=principal,
                                    revision=record.revision)
        body = json.loads(stored)
    if decision.input_tokens is not None:
        await store.record_usage(ctx.manifest_id, decision.input_tokens, principal=principal,
                                 cached_input_tokens=decision.cached_input_tokens,
                                 cache_write_input_tokens=decision.cache_write_input_tokens)
    await pause_point("decide_after_write")
    return _result(record, body)
