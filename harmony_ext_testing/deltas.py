"""Streamed deltas put together the way an OpenAI client does (tests and demos only)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def merge_deltas(deltas: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Concatenate streamed deltas the way an OpenAI client does ."""
    reasoning: list[str] = []
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        if not delta:
            continue
        if "reasoning" in delta:
            reasoning.append(delta["reasoning"])
        if delta.get("content"):
            content.append(delta["content"])
        for item in delta.get("tool_calls") or ():
            call = calls.setdefault(item["index"], {"id": None, "name": None, "arguments": []})
            if item.get("id"):
                call["id"] = item["id"]
            function = item.get("function") or {}
            if function.get("name"):
                call["name"] = function["name"]
            call["arguments"].append(function.get("arguments") or "")
    return {
        "reasoning": "".join(reasoning) if reasoning else None,
        "content": "".join(content) if content else None,
        "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": "".join(c["arguments"])}}
            for _, c in sorted(calls.items())
        ],
    }
