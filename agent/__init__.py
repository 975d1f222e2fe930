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
from agent.fees import SERVER_TOOL_FEES, ServerToolFees
from agent.llm import (
    LLM,
    AnthropicLLM,
    AsyncAnthropicLLM,
    AsyncLLM,
    MissingAPIKey,
    StreamingLLM,
    TokenCounter,
)
from agent.loop import Agent
from agent.mcp import HttpServer, McpTool, McpToolError, McpUnavailable, RemoteMcp, StdioServer, mcp_tools
from agent.memory import Memory
from agent.memory_tool import memory_tool
from agent.models import MODELS, ModelInfo, ModelTable
from agent.registry import Tool, ToolCall, ToolOutcome, ToolRegistry, tool
from agent.request_log import read_requests, request_at
from agent.server_tools import ServerTool, code_execution, server_tool, web_fetch, web_search
from agent.session import Session, SessionError, SessionWriteError, read_session
from agent.state import RunResult, RunState
from agent.tool_search import SEARCH_TOOL_NAME, ToolIndex, server_search_tool
from agent.usage import PRICES, Price, RunUsage, Usage

__all__ = [
    "LLM",
    "MODELS",
    "PRICES",
    "SEARCH_TOOL_NAME",
    "SERVER_TOOL_FEES",
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
    "HttpServer",
    "McpTool",
    "McpToolError",
    "McpUnavailable",
    "Memory",
    "MissingAPIKey",
    "ModelCallFailed",
    "ModelInfo",
    "ModelTable",
    "Price",
    "RemoteMcp",
    "RunResult",
    "RunState",
    "RunUsage",
    "ServerTool",
    "ServerToolFees",
    "Session",
    "SessionError",
    "SessionWriteError",
    "StdioServer",
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
    "code_execution",
    "compress",
    "deny_by_default",
    "find_pointer",
    "mcp_tools",
    "memory_tool",
    "read_requests",
    "read_session",
    "request_at",
    "server_search_tool",
    "server_tool",
    "tool",
    "web_fetch",
    "web_search",
]
