"""Public test kit: a scripted in-process model, the strict request validator, the local
Messages API simulator (`agent.testing.simulator`, with its prompt-cache model in
`cache_model`), the one vocabulary both models are scripted in (`policies`) and cassette
helpers (`cassettes`)."""

from agent.testing.policies import call, latest_results, reply, scripted, server_call, text, tool_use
from agent.testing.scripted_llm import ScriptedLLM
from agent.testing.simulator import MessagesSimulator
from agent.testing.validate import validate_count_tokens, validate_request

__all__ = [
    "MessagesSimulator",
    "ScriptedLLM",
    "call",
    "latest_results",
    "reply",
    "scripted",
    "server_call",
    "text",
    "tool_use",
    "validate_count_tokens",
    "validate_request",
]
