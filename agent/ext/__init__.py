"""Extensions: every feature beyond the core, each an `agent.extension.Extension` on the one seam.

Each subpackage is one feature with its options on its own constructor, imported from its
own path (the core never imports any of them, and `import-linter` in CI holds that):

    agent.ext.approval      Approval: the gate for irreversible tools, and never twice in a run
    agent.ext.sessions      Session, resume: a durable record of a run, resumed after a crash
    agent.ext.tool_search   ToolSearch: deferred tool declarations found through search
    agent.ext.mcp           mcp_tools (local MCP servers) and McpConnector (the API's connector)
    agent.ext.server_tools  web_search, web_fetch, code_execution: tools the API runs; containers
    agent.ext.memory_tool   the API's memory tool, on files confined to one folder
    agent.ext.request_log   RequestLog: the exact request of every step, and `inspect` to read it
    agent.ext.summaries     Summaries: a small model summarises long free text before the diet cuts it
    agent.ext.context_management  ContextManagement: the API clears old results or compacts itself
    agent.ext.output        Output: the final answer validated into a pydantic object (`result.output`)
    agent.ext.subagents     SubAgent: an Agent as another's tool, its bill and budget the parent's
    agent.ext.otel          Traces: OpenTelemetry spans of runs, model and tool calls (GenAI conventions)
    agent.ext.batches       BatchLLM: many runs' model calls as Message Batches, at half price
    agent.ext.charts        a run's economics as a chart, from its usage log
    agent.ext.durable       durable runs on DBOS: queues, many workers, approvals across processes
"""
