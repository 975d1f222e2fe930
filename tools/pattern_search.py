"""Moved to `agent.context.pattern_search`; kept so old imports work."""

from agent.context.pattern_search import compile_pattern, search, syntax_help

__all__ = ["compile_pattern", "search", "syntax_help"]
