"""Reusable tools for agents built on `agent`. Import what you need:

from tools import calculator, word_count, current_time
"""

from tools.basic import calculator, current_time, make_current_time, word_count

__all__ = ["calculator", "current_time", "make_current_time", "word_count"]
