"""Small tool schemas bounded like the agent's own (an enum, integer ranges, length-limited
strings), for tests that ask a real vLLM server for a tool call without the whole harness."""

from __future__ import annotations

TAP = {"type": "function", "function": {
    "name": "tap", "description": "Tap the element with this index.",
    "parameters": {"type": "object", "additionalProperties": False, "required": ["index"],
                   "properties": {"index": {"type": "integer", "minimum": 0, "maximum": 40}}}}}
SWIPE = {"type": "function", "function": {
    "name": "swipe", "description": "Swipe in a direction.",
    "parameters": {"type": "object", "additionalProperties": False, "required": ["direction"],
                   "properties": {"direction": {"type": "string", "enum": ["up", "down", "left", "right"]}}}}}
TASK_COMPLETE = {"type": "function", "function": {
    "name": "task_complete", "description": "The goal holds.",
    "parameters": {"type": "object", "additionalProperties": False, "required": ["reason"],
                   "properties": {"reason": {"type": "string", "maxLength": 24}}}}}
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (TAP, SWIPE, TASK_COMPLETE)}
