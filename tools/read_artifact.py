"""Moved to `agent.context.read_artifact` (the core never imports this package); kept so old
imports work."""

from agent.context.artifact_reader import select_json
from agent.context.read_artifact import make_read_artifact, read_artifact

__all__ = ["make_read_artifact", "read_artifact", "select_json"]
