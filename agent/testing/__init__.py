"""Public test kit: a scripted in-process model, the strict request validator (and,
with the offline harness, the Messages API simulator and cassette helpers)."""

from agent.testing.scripted import ScriptedLLM, reply, text, tool_use
from agent.testing.validate import validate_request

__all__ = ["ScriptedLLM", "reply", "text", "tool_use", "validate_request"]
