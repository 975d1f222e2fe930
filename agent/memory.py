"""A key/value memory the model writes and reads, kept outside the history.

Some facts must not be at the mercy of a lossy summary: the model saves them with `memory_write`
and reads them with `memory_read` (`tools.memory`), out of reach of compaction and pruning, and
optionally in a JSON file across runs. The key list is not in the system prompt (each write would
invalidate the whole prompt cache) but appended to the newest, unsent user turn when it differs
from the last note in the history; a compaction that folds that note away gets a fresh one.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from agent.errors import AgentError
from agent.messages import Msg, blocks

__all__ = ["MEMORY_NOTE_PREFIX", "Memory", "MemoryKeyError", "latest_memory_note", "with_memory_note"]

MEMORY_NOTE_PREFIX = "[memory keys: "
KEY = re.compile(r"^[\w.:/-]{1,64}$")


class MemoryKeyError(AgentError, KeyError):
    """A key that is not in memory; the message names the keys that are."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "missing memory key"


class Memory:
    """Thread-safe string key/value store, optionally persisted to a JSON file.

    Args:
        path: JSON file to load from (if it exists) and save to after each write.
        max_keys: most keys held; a new key beyond it is refused.
        max_value_chars: longest value accepted.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        max_keys: int = 100,
        max_value_chars: int = 4000,
        initial: Mapping[str, str] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.max_keys = max_keys
        self.max_value_chars = max_value_chars
        self._lock = threading.Lock()
        self._data: dict[str, str] = {}
        if self.path is not None and self.path.exists():
            self._data = _load(self.path)
        for key, value in (initial or {}).items():
            self.write(key, value)

    def write(self, key: str, value: str) -> str:
        """Store `value` under `key` (overwriting); returns a one-line confirmation."""
        if not isinstance(key, str) or not KEY.match(key):
            raise ValueError(f"invalid memory key {key!r}: use 1-64 letters, digits, or _ . : / -")
        if not isinstance(value, str):
            raise ValueError("memory values are strings")
        if len(value) > self.max_value_chars:
            raise ValueError(f"value too long ({len(value):,} chars; at most {self.max_value_chars:,})")
        with self._lock:
            if key not in self._data and len(self._data) >= self.max_keys:
                raise ValueError(f"memory is full ({self.max_keys} keys): overwrite an existing key instead")
            existed = key in self._data
            self._data[key] = value
            self._save()
        return f"{'updated' if existed else 'saved'} {key} ({len(value):,} chars)"

    def read(self, key: str) -> str:
        """The value under `key`; a clear error naming the known keys when it is absent."""
        with self._lock:
            if key in self._data:
                return self._data[key]
            known = ", ".join(sorted(self._data)) or "none"
        raise MemoryKeyError(f"no memory under {key!r}; known keys: {known}")

    def delete(self, key: str) -> bool:
        """Remove `key`; True if it was there."""
        with self._lock:
            found = self._data.pop(key, None) is not None
            if found:
                self._save()
        return found

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._data)

    def items(self) -> dict[str, str]:
        """A copy of everything stored."""
        with self._lock:
            return dict(self._data)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def note(self) -> str:
        """The line the model sees: `[memory keys: a, b] read one with memory_read`."""
        keys = self.keys()
        if not keys:
            return f"{MEMORY_NOTE_PREFIX}none]"
        return f"{MEMORY_NOTE_PREFIX}{', '.join(keys)}] (read a value with memory_read)"

    def _save(self) -> None:
        """Atomic write (temp file + rename), so a crash never leaves half a file."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(self._data, out, ensure_ascii=False, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _load(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot load memory from {path}: {error} (the file was left as it is)") from error
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):  # JSON keys are str
        raise ValueError(f"cannot load memory from {path}: expected a JSON object of strings")
    return data


def latest_memory_note(messages: Sequence[Msg]) -> str | None:
    """The newest memory note already in the history, if any."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        for block in reversed(blocks(message)):
            text = block.get("text")
            if block.get("type") == "text" and isinstance(text, str) and text.startswith(MEMORY_NOTE_PREFIX):
                return text
    return None


def with_memory_note(messages: Sequence[Msg], memory: Memory) -> list[Msg]:
    """A new list: `messages` with the key list appended to the newest user turn if it changed since
    the last note; nothing while memory never held a key, nor after an assistant turn (`pause_turn`
    is sent back as it is)."""
    note = memory.note()
    previous = latest_memory_note(messages)
    if not messages or messages[-1].get("role") != "user" or note == previous:
        return list(messages)
    if previous is None and not len(memory):
        return list(messages)
    last = messages[-1]
    return [*messages[:-1], {**last, "content": [*blocks(last), {"type": "text", "text": note}]}]
