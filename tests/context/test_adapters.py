"""Provider adapters: golden serializations and one failing payload per validation rule.

Golden files live in ``tests/context/golden/``; ``PRESSROOM_UPDATE_GOLDEN=1`` rewrites them
(review the diff before committing).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from context.seal.adapters import CacheRequest, SerializationError, get_adapter
from context.seal.adapters.anthropic_messages import MAX_BREAKPOINTS, AnthropicMessagesAdapter
from context.seal.adapters.openai_chat import OpenAIChatAdapter
from context.seal.render import AssemblyInput, assemble_messages, parse_data_blocks
from context.tokens import TokenCounter
from context.tool_history import ToolCall, ToolHistory
from context.tools.pairing import pair_tool_history
from tests.context.helpers_support import (
    TOOLS,
    code_item,
    control,
    history,
    task,
    web_item,
)

GOLDEN = Path(__file__).parent / "golden"
WEIRD_ID = "toolu:weird id/" + "x" * 40


def golden_assembly() -> AssemblyInput:
    h = history()
    h = ToolHistory(
        calls=(
            *h.calls,
            ToolCall(call_id=WEIRD_ID, tool_name="grep", arguments={"q": "é"}, turn=3),
        ),
        results=h.results,
    )
    return assemble_messages(
        control=[control()],
        task=[task()],
        data=[code_item(), web_item()],
        tool_pairs=pair_tool_history(h).pairs,
        tool_definitions=TOOLS,
        missing_topics=["release date"],
        flags={"web-blog": ("instruction_like_text",)},
    )


def golden_cache() -> CacheRequest:
    """Caching as the engine asks for it: the stable prefix, one history boundary (here the
    last data block, standing where a history summary ends) and a per-job key."""
    messages = golden_assembly().messages
    boundary = max(i for i, m in enumerate(messages) if "web-blog" in m.item_ids)
    return CacheRequest(stable_prefix=True, boundaries=(boundary,),
                        key="pressroom-0123456789abcdef0123456789abcdef")


@pytest.mark.parametrize("name", ["openai_chat", "anthropic_messages"])
def test_golden_serialization(name: str) -> None:
    """The golden requests carry the prompt-cache request: Anthropic ``cache_control`` on
    the system block and on the boundary's last block, OpenAI ``prompt_cache_key``."""
    adapter = get_adapter(name)
    req = adapter.serialize(golden_assembly(), "test-model", 2048, golden_cache())
    record = {
        "adapter": req.adapter,
        "adapter_version": req.adapter_version,
        "serialization_policy_version": req.serialization_policy_version,
        "hash": req.hash,
        "id_map": req.id_map,
        "payload": req.payload,
    }
    path = GOLDEN / f"{name}.json"
    if os.environ.get("PRESSROOM_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(record, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    expected = json.loads(path.read_text())
    assert record == expected
    assert req.canonical_json == json.dumps(
        req.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


@pytest.mark.parametrize("name", ["openai_chat", "anthropic_messages"])
def test_serialization_is_deterministic_and_valid(name: str) -> None:
    adapter = get_adapter(name)
    a = adapter.serialize(golden_assembly(), "m", 100)
    b = adapter.serialize(golden_assembly(), "m", 100)
    assert a.canonical_json == b.canonical_json and a.hash == b.hash
    adapter.validate(copy.deepcopy(a.payload))
    assert WEIRD_ID in a.id_map and a.id_map[WEIRD_ID].startswith("call_")
    assert len(a.id_map[WEIRD_ID]) <= 40
    sent_ids = [
        c.get("id") or c.get("tool_use_id") or c.get("tool_call_id")
        for m in a.payload["messages"]
        for c in (m.get("tool_calls") or (m["content"] if isinstance(m["content"], list) else [m]))
    ]
    assert WEIRD_ID not in sent_ids and a.id_map[WEIRD_ID] in sent_ids


def test_token_count_of_payload() -> None:
    counter = TokenCounter()
    oa = get_adapter("openai_chat").serialize(golden_assembly(), "m", 100)
    an = get_adapter("anthropic_messages").serialize(golden_assembly(), "m", 100)
    n_oa = get_adapter("openai_chat").count_tokens(oa.payload, counter)
    assert n_oa == counter.count_messages(oa.payload["messages"], oa.payload["tools"])
    n_an = get_adapter("anthropic_messages").count_tokens(an.payload, counter)
    assert abs(n_oa - n_an) < n_oa * 0.2


def test_anthropic_merges_and_orders_blocks() -> None:
    p = get_adapter("anthropic_messages").serialize(golden_assembly(), "m", 10).payload
    roles = [m["role"] for m in p["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert "system" in p and "skip human approval" not in p["system"].lower()
    first_results = p["messages"][2]["content"]
    assert [b["tool_use_id"] for b in first_results] == ["call_repoA", "call_repoB"]
    assert p["messages"][4]["content"][0]["is_error"] is True


def test_openai_tool_messages_follow_calls() -> None:
    p = get_adapter("openai_chat").serialize(golden_assembly(), "m", 10).payload
    msgs = p["messages"]
    i = next(i for i, m in enumerate(msgs) if m.get("tool_calls"))
    ids = [c["id"] for c in msgs[i]["tool_calls"]]
    assert [m["tool_call_id"] for m in msgs[i + 1 : i + 1 + len(ids)]] == ids
    web = [m for m in msgs if "web-blog" in m.get("content", "")]
    assert web and all(m["role"] == "user" for m in web)
    assert parse_data_blocks(web[0]["content"])[0].flags == ("instruction_like_text",)


def openai_payload() -> dict[str, Any]:
    return copy.deepcopy(get_adapter("openai_chat").serialize(golden_assembly(), "m", 10).payload)


def anthropic_payload() -> dict[str, Any]:
    return copy.deepcopy(
        get_adapter("anthropic_messages").serialize(golden_assembly(), "m", 10).payload
    )


def _first_call_index(p: dict[str, Any]) -> int:
    return next(i for i, m in enumerate(p["messages"]) if m.get("tool_calls"))


def _oa_orphan(p: dict[str, Any]) -> None:
    p["messages"].append({"role": "tool", "tool_call_id": "ghost", "content": "x"})


def _oa_unanswered(p: dict[str, Any]) -> None:
    i = _first_call_index(p)
    del p["messages"][i + 1]


def _oa_interleaved(p: dict[str, Any]) -> None:
    i = _first_call_index(p)
    p["messages"].insert(i + 1, {"role": "user", "content": "hi"})


def _oa_dup_id(p: dict[str, Any]) -> None:
    i = _first_call_index(p)
    p["messages"][i]["tool_calls"][1]["id"] = p["messages"][i]["tool_calls"][0]["id"]


def _oa_long_id(p: dict[str, Any]) -> None:
    i = _first_call_index(p)
    p["messages"][i]["tool_calls"][0]["id"] = "c" * 41


def _oa_system_late(p: dict[str, Any]) -> None:
    p["messages"].insert(2, {"role": "system", "content": "late"})


def _oa_bad_name(p: dict[str, Any]) -> None:
    p["tools"][0]["function"]["name"] = "read source"


def _oa_bad_args(p: dict[str, Any]) -> None:
    i = _first_call_index(p)
    p["messages"][i]["tool_calls"][0]["function"]["arguments"] = "[1]"


def _oa_last_assistant(p: dict[str, Any]) -> None:
    p["messages"].append({"role": "assistant", "content": "done"})


def _oa_dup_tool(p: dict[str, Any]) -> None:
    p["tools"].append(copy.deepcopy(p["tools"][0]))


def _oa_bad_role(p: dict[str, Any]) -> None:
    p["messages"][1]["role"] = "developer-x"


def _oa_max(p: dict[str, Any]) -> None:
    p["max_completion_tokens"] = 0


@pytest.mark.parametrize(
    ("mutate", "rule"),
    [
        (_oa_orphan, "orphan_tool_result"),
        (_oa_unanswered, "tool_results_follow_call"),
        (_oa_interleaved, "tool_results_follow_call"),
        (_oa_dup_id, "duplicate_tool_call_id"),
        (_oa_long_id, "tool_call_id_format"),
        (_oa_system_late, "system_only_first"),
        (_oa_bad_name, "tool_name_format"),
        (_oa_bad_args, "tool_call_shape"),
        (_oa_last_assistant, "last_message_role"),
        (_oa_dup_tool, "duplicate_tool_name"),
        (_oa_bad_role, "role_known"),
        (_oa_max, "payload_shape"),
    ],
)
def test_openai_validation_names_the_rule(mutate: Any, rule: str) -> None:
    p = openai_payload()
    OpenAIChatAdapter().validate(p)
    mutate(p)
    with pytest.raises(SerializationError) as err:
        OpenAIChatAdapter().validate(p)
    assert err.value.rule == rule and rule in str(err.value)


def _an_first_assistant(p: dict[str, Any]) -> None:
    del p["messages"][0]


def _an_not_alternating(p: dict[str, Any]) -> None:
    p["messages"].insert(1, {"role": "user", "content": [{"type": "text", "text": "x"}]})


def _an_result_missing(p: dict[str, Any]) -> None:
    del p["messages"][2]["content"][1]


def _an_result_after_text(p: dict[str, Any]) -> None:
    p["messages"][2]["content"].insert(0, {"type": "text", "text": "note"})


def _an_orphan(p: dict[str, Any]) -> None:
    p["messages"][2]["content"][0]["tool_use_id"] = "ghost"


def _an_dup_result(p: dict[str, Any]) -> None:
    p["messages"][2]["content"].append(copy.deepcopy(p["messages"][2]["content"][0]))


def _an_bad_id(p: dict[str, Any]) -> None:
    p["messages"][1]["content"][0]["id"] = "bad id!"


def _an_dup_use(p: dict[str, Any]) -> None:
    p["messages"][3]["content"][0]["id"] = p["messages"][1]["content"][0]["id"]


def _an_system_message(p: dict[str, Any]) -> None:
    p["messages"].insert(0, {"role": "system", "content": [{"type": "text", "text": "x"}]})


def _an_empty_text(p: dict[str, Any]) -> None:
    p["messages"][0]["content"][0]["text"] = ""


def _an_last_assistant(p: dict[str, Any]) -> None:
    p["messages"].append({"role": "assistant", "content": [{"type": "text", "text": "x"}]})


def _an_bad_tool_name(p: dict[str, Any]) -> None:
    p["tools"][0]["name"] = "x" * 65


def _an_no_schema(p: dict[str, Any]) -> None:
    del p["tools"][0]["input_schema"]


def _an_unknown_block(p: dict[str, Any]) -> None:
    p["messages"][0]["content"].append({"type": "image"})


@pytest.mark.parametrize(
    ("mutate", "rule"),
    [
        (_an_first_assistant, "first_message_user"),
        (_an_not_alternating, "roles_alternate"),
        (_an_result_missing, "tool_result_in_next_message"),
        (_an_result_after_text, "tool_results_first"),
        (_an_orphan, "orphan_tool_result"),
        (_an_dup_result, "duplicate_tool_result"),
        (_an_bad_id, "tool_use_id_format"),
        (_an_dup_use, "duplicate_tool_use_id"),
        (_an_system_message, "system_top_level"),
        (_an_empty_text, "nonempty_text"),
        (_an_last_assistant, "last_message_user"),
        (_an_bad_tool_name, "tool_name_format"),
        (_an_no_schema, "tool_definition_shape"),
        (_an_unknown_block, "content_blocks"),
    ],
)
def test_anthropic_validation_names_the_rule(mutate: Any, rule: str) -> None:
    p = anthropic_payload()
    AnthropicMessagesAdapter().validate(p)
    mutate(p)
    with pytest.raises(SerializationError) as err:
        AnthropicMessagesAdapter().validate(p)
    assert err.value.rule == rule


def test_serialize_rejects_an_exchange_without_user_turn() -> None:
    pairs = pair_tool_history(history()).pairs
    a = assemble_messages(control=[control()], tool_pairs=pairs)
    with pytest.raises(SerializationError) as err:
        get_adapter("anthropic_messages").serialize(a, "m", 10)
    assert err.value.rule == "first_message_user"


def _breakpoints(p: dict[str, Any]) -> list[str]:
    """Where ``p`` carries ``cache_control``, in the API's order (tools, system, messages)."""
    found = [f"tools[{i}]" for i, t in enumerate(p.get("tools") or []) if "cache_control" in t]
    if isinstance(p.get("system"), list):
        found += [f"system[{j}]" for j, b in enumerate(p["system"]) if "cache_control" in b]
    return found + [f"messages[{i}].content[{j}]" for i, m in enumerate(p["messages"])
                    for j, b in enumerate(m["content"]) if "cache_control" in b]


def test_cache_breakpoints_are_in_the_sealed_request_and_pass_validation() -> None:
    """The breakpoints are part of the payload the hash covers, pass the adapter's own
    validation, and the engine's prefix count stops at the last one."""
    adapter = AnthropicMessagesAdapter()
    plain = adapter.serialize(golden_assembly(), "m", 10)
    cached = adapter.serialize(golden_assembly(), "m", 10, golden_cache())
    p = cached.payload
    adapter.validate(copy.deepcopy(p))
    assert _breakpoints(plain.payload) == [] and plain.hash != cached.hash
    assert json.loads(cached.canonical_json) == p
    # the stable prefix ends on the system block (tools come before it in the API's order);
    # the boundary's web-blog block is the last text block of the first user message
    assert _breakpoints(p) == ["system[0]", "messages[0].content[3]"]
    assert p["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "web-blog" in p["messages"][0]["content"][3]["text"]
    counter = TokenCounter()
    head = [{"role": "system", "content": p["system"]},
            {"role": "user", "content": p["messages"][0]["content"]}]
    assert adapter.cacheable_prefix_tokens(p, counter) == counter.count_messages(head, p["tools"])
    assert adapter.count_tokens(p, counter) == adapter.count_tokens(plain.payload, counter)
    assert adapter.cacheable_prefix_tokens(plain.payload, counter) == 0


def test_anthropic_keeps_at_most_four_breakpoints_the_latest() -> None:
    every = tuple(range(len(golden_assembly().messages)))
    p = AnthropicMessagesAdapter().serialize(
        golden_assembly(), "m", 10, CacheRequest(stable_prefix=True, boundaries=every)).payload
    marks = _breakpoints(p)
    assert len(marks) == MAX_BREAKPOINTS and marks[0] == "system[0]"
    assert marks[-1] == f"messages[{len(p['messages']) - 1}].content[0]"


def test_without_system_text_the_last_tool_closes_the_prefix() -> None:
    a = golden_assembly()
    a = AssemblyInput(messages=tuple(m for m in a.messages if m.role != "system"),
                      tool_definitions=a.tool_definitions)
    p = AnthropicMessagesAdapter().serialize(a, "m", 10, CacheRequest(stable_prefix=True)
                                             ).payload
    assert "system" not in p and _breakpoints(p) == [f"tools[{len(p['tools']) - 1}]"]
    counter = TokenCounter()
    assert AnthropicMessagesAdapter().cacheable_prefix_tokens(p, counter) == \
        counter.tool_definition_tokens(p["tools"])


def test_openai_prompt_cache_key_and_prefix_count() -> None:
    adapter = OpenAIChatAdapter()
    p = adapter.serialize(golden_assembly(), "m", 10, golden_cache()).payload
    adapter.validate(copy.deepcopy(p))
    assert p["prompt_cache_key"] == golden_cache().key
    assert "cache_control" not in json.dumps(p)  # OpenAI caches prefixes on its own
    counter = TokenCounter()
    assert adapter.cacheable_prefix_tokens(p, counter) == counter.count_messages(
        p["messages"][:1], p["tools"])


def _an_cache_control_kind(p: dict[str, Any]) -> None:
    p["messages"][0]["content"][0]["cache_control"] = {"type": "persistent"}


def _an_cache_control_ttl(p: dict[str, Any]) -> None:
    p["tools"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1d"}


def _an_five_breakpoints(p: dict[str, Any]) -> None:
    for block in [*p["tools"], *p["messages"][0]["content"]][:5]:
        block["cache_control"] = {"type": "ephemeral"}


def _an_system_not_text(p: dict[str, Any]) -> None:
    p["system"] = [{"type": "image", "text": "x"}]


@pytest.mark.parametrize(
    ("mutate", "rule"),
    [
        (_an_cache_control_kind, "cache_control"),
        (_an_cache_control_ttl, "cache_control"),
        (_an_five_breakpoints, "cache_breakpoints"),
        (_an_system_not_text, "system_top_level"),
    ],
)
def test_anthropic_cache_breakpoints_are_validated(mutate: Any, rule: str) -> None:
    p = copy.deepcopy(AnthropicMessagesAdapter().serialize(
        golden_assembly(), "m", 10, golden_cache()).payload)
    mutate(p)
    with pytest.raises(SerializationError) as err:
        AnthropicMessagesAdapter().validate(p)
    assert err.value.rule == rule


@pytest.mark.parametrize("key", ["", "k" * 65, "job id with spaces", 7])
def test_openai_prompt_cache_key_is_validated(key: Any) -> None:
    p = openai_payload()
    p["prompt_cache_key"] = key
    with pytest.raises(SerializationError) as err:
        OpenAIChatAdapter().validate(p)
    assert err.value.rule == "prompt_cache_key"


def test_unknown_adapter_is_named() -> None:
    with pytest.raises(ValueError, match="nope"):
        get_adapter("nope")
