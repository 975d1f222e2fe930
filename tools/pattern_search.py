"""Moved to `agent.context.pattern_search` (the core never imports this package); kept so old
imports work."""

from agent.context.pattern_search import *  # noqa: F403
from agent.context.pattern_search import __all__ as __all__
