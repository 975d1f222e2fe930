"""Runnable teaching agents, one idea each: `python -m examples.<name>` (offline without a key)."""
