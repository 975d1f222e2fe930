"""Reusable tools for agents built on `agent`. Import what you need:

from tools import calculator, word_count, current_time
"""

from agent.context.read_artifact import make_read_artifact, read_artifact
from tools.basic import calculator, current_time, make_current_time, word_count
from tools.memory import memory_tools

__all__ = [
    "calculator",
    "current_time",
    "make_current_time",
    "make_read_artifact",
    "memory_tools",
    "read_artifact",
    "word_count",
]
