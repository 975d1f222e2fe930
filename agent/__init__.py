"""agent-from-scratch: a small, readable agent loop that spends fewer tokens."""

from agent.errors import (
    AgentError,
    BudgetExceeded,
    CostBudgetExceeded,
    ModelCallFailed,
    StepBudgetExceeded,
    TokenBudgetExceeded,
)
from agent.llm import LLM, AnthropicLLM
from agent.loop import Agent, RunResult, RunState
from agent.registry import Tool, ToolCall, ToolOutcome, ToolRegistry, tool
from agent.usage import PRICES, Price, RunUsage, Usage

__all__ = [
    "LLM",
    "PRICES",
    "Agent",
    "AgentError",
    "AnthropicLLM",
    "BudgetExceeded",
    "CostBudgetExceeded",
    "ModelCallFailed",
    "Price",
    "RunResult",
    "RunState",
    "RunUsage",
    "StepBudgetExceeded",
    "TokenBudgetExceeded",
    "Tool",
    "ToolCall",
    "ToolOutcome",
    "ToolRegistry",
    "Usage",
    "tool",
]
