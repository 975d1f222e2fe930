"""agent-from-scratch: a small, readable agent loop that spends fewer tokens.

The core is importable from here: the loop (`Agent`), the model seam (`LLM`,
`AnthropicLLM`), tools (`tool`), budgets, usage and the one exception tree. Everything
beyond it is an `Extension`, imported from its own subpackage under `agent.ext`
(sessions, approval, MCP, tool search, server tools, ...); `agent.context` holds the
pure functions of the context economy, `agent.testing` the test kit.
"""

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
from agent.llm import LLM, AnthropicLLM, AsyncAnthropicLLM, AsyncLLM
from agent.loop import Agent
from agent.models import MODELS, ModelTable
from agent.state import RunResult, RunState
from agent.tools import Tool, ToolCall, ToolOutcome, tool
from agent.usage import RunUsage, Usage

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    """`Memory` is imported the first time it is named: a run without memory never loads it."""
    if name == "Memory":
        from agent.memory import Memory

        return Memory
    raise AttributeError(f"module 'agent' has no attribute {name!r}")
