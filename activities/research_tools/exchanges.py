"""Where one tool call's stored exchange lives, and how to read it back.

Each call's exchange — the call, its argument hash, the full result and its hash — is one
``tool_record`` artifact per call id (``activities.tool_call`` writes it once); a call's
retry, a note's cited calls and ``record_turn``'s notes all read it here.
"""

from __future__ import annotations

import json
from typing import Any

from artifacts import Store


def exchange_id(job_id: str, call_id: str) -> str:
    """The artifact id of one call's stored exchange."""
    return f"{job_id}:tool:{call_id}"


async def stored_exchange(store: Store, artifact_id: str,
                          principal: Any) -> tuple[Any, dict[str, Any]] | None:
    """The stored exchange (its record and body) under ``artifact_id``, if there is one."""
    record = await store.head("tool_record", artifact_id, principal=principal)
    if record is None:
        return None
    _, raw = await store.get("tool_record", artifact_id, principal=principal,
                             revision=record.revision)
    body: dict[str, Any] = json.loads(raw)
    return record, body
