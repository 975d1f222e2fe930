"""`memory_write` and `memory_read`: the model's own notebook, bound to one `Memory`.

Facts that must outlive a compaction (an order id, an amount that was agreed, a
decision) go here instead of being trusted to a summary. Give the agent the same
store as `memory=` so it shows the model which keys exist at each step:

    memory = Memory("memory.json")
    agent = Agent(tools=[*memory_tools(memory), ...], memory=memory)
"""

from __future__ import annotations

from agent.memory import Memory
from agent.tools import Tool, tool

__all__ = ["memory_tools"]


def memory_tools(memory: Memory) -> list[Tool]:
    """The two memory tools, reading and writing `memory`."""

    def memory_write(key: str, value: str) -> str:
        """Save a fact under a short key so it is kept for the rest of the task, even after
        the conversation is summarized. Writing an existing key replaces its value.

        Args:
            key: a short name such as order_id or refund_status (letters, digits, _ . : / -).
            value: the fact, with exact values.
        """
        return memory.write(key, value)

    def memory_read(key: str) -> str:
        """Read the value saved under a key (the keys are listed in the newest message).

        Args:
            key: one of the listed memory keys.
        """
        return memory.read(key)

    return [tool(memory_write), tool(memory_read)]
