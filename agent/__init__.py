"""agent-from-scratch: a small, readable agent loop that spends fewer tokens.

Everything a user needs is importable from here; `agent.testing` holds the test kit
(scripted model, strict simulator, request validator) and `agent.context` the pure
functions of the context economy for those who build their own loop.
"""

from agent.approval import Approver, TerminalApprover, deny_by_default
from agent.context.artifacts import ArtifactStore, find_pointer
from agent.context.compress import compress
from agent.errors import (
    AgentError,
    BudgetExceeded,
    CostBudgetExceeded,
    ModelCallFailed,
    StepBudgetExceeded,
    TokenBudgetExceeded,
)
from agent.events import Event
from agent.llm import LLM, AnthropicLLM, AsyncAnthropicLLM, AsyncLLM, StreamingLLM, TokenCounter
from agent.loop import Agent
from agent.memory import Memory
from agent.models import MODELS, ModelInfo, ModelTable
from agent.registry import Tool, ToolCall, ToolOutcome, ToolRegistry, tool
from agent.session import Session, SessionError, SessionWriteError, read_session
from agent.state import RunResult, RunState
from agent.tool_search import SEARCH_TOOL_NAME, ToolIndex, server_search_tool
from agent.usage import PRICES, Price, RunUsage, Usage

__all__ = [
    "LLM",
    "MODELS",
    "PRICES",
    "SEARCH_TOOL_NAME",
    "Agent",
    "AgentError",
    "AnthropicLLM",
    "Approver",
    "ArtifactStore",
    "AsyncAnthropicLLM",
    "AsyncLLM",
    "BudgetExceeded",
    "CostBudgetExceeded",
    "Event",
    "Memory",
    "ModelCallFailed",
    "ModelInfo",
    "ModelTable",
    "Price",
    "RunResult",
    "RunState",
    "RunUsage",
    "Session",
    "SessionError",
    "SessionWriteError",
    "StepBudgetExceeded",
    "StreamingLLM",
    "TerminalApprover",
    "TokenBudgetExceeded",
    "TokenCounter",
    "Tool",
    "ToolCall",
    "ToolIndex",
    "ToolOutcome",
    "ToolRegistry",
    "Usage",
    "compress",
    "deny_by_default",
    "find_pointer",
    "read_session",
    "server_search_tool",
    "tool",
]
