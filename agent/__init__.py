"""agent-from-scratch: a small, readable agent loop that spends fewer tokens.

The core is importable from here; everything else is an `Extension` under `agent.ext`, `agent.context`
holds the context economy's pure functions, `agent.testing` the test kit."""

import importlib
from typing import TYPE_CHECKING, Any

from agent.errors import (
    AgentError,
    BudgetExceeded,
    CostBudgetExceeded,
    MissingAPIKey,
    ModelCallFailed,
    StepBudgetExceeded,
    TokenBudgetExceeded,
)
from agent.events import Event
from agent.extension import Extension
from agent.llm import LLM, AsyncLLM
from agent.loop import Agent
from agent.models import MODELS, ModelTable
from agent.state import RunResult, RunState
from agent.tools import Tool, ToolCall, ToolOutcome, tool
from agent.usage import RunUsage, Usage

if TYPE_CHECKING:
    from agent.anthropic_llm import AnthropicLLM, AsyncAnthropicLLM
    from agent.memory import Memory

__all__ = [
    "LLM",
    "MODELS",
    "Agent",
    "AgentError",
    "AnthropicLLM",
    "AsyncAnthropicLLM",
    "AsyncLLM",
    "BudgetExceeded",
    "CostBudgetExceeded",
    "Event",
    "Extension",
    "Memory",
    "MissingAPIKey",
    "ModelCallFailed",
    "ModelTable",
    "RunResult",
    "RunState",
    "RunUsage",
    "StepBudgetExceeded",
    "TokenBudgetExceeded",
    "Tool",
    "ToolCall",
    "ToolOutcome",
    "Usage",
    "tool",
]


_LAZY = {
    "Memory": "agent.memory",
    "AnthropicLLM": "agent.anthropic_llm",
    "AsyncAnthropicLLM": "agent.anthropic_llm",
}
"""Names imported on first use: a run without memory, or with another model, never loads them."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent' has no attribute {name!r}")
