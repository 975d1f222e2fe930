"""Full tool results kept on disk, so whatever the context leaves out stays one read away.

Cutting a tool result is only safe if the cut part can be had back. Every non-trivial
result is therefore written here in full, and the text the model reads carries a
short pointer to it:

    artifact:search_orders-1f0c9a7e42b1.json

The pointer is plain text (the history stays wire-clean) and greppable:
`find_pointer(text)` returns the name, `marker(name)` builds it. The `read_artifact`
tool (`tools/read_artifact.py`) turns a name back into a slice of the result.

Names are the sanitized tool name plus a hash of the content, so the same output is
stored once and a name can never point at different bytes. Writes are atomic (a
temp file renamed into place), each artifact has a size cap, each run folder a total
cap, and opening a new run folder deletes the oldest run folders beyond `keep_runs`
(only folders this store created: they hold an `index.jsonl`).

The index maps each `tool_use_id` to its artifact and is appended to a JSONL file in
the run folder, so `name_for(tool_use_id)` also works after a resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

__all__ = [
    "INDEX_FILE",
    "ArtifactStore",
    "artifact_name",
    "cleanup_runs",
    "find_pointer",
    "marker",
    "resolve_artifact",
]

INDEX_FILE = "index.jsonl"
POINTER_PREFIX = "artifact:"
NAME_PATTERN = r"[A-Za-z0-9_-]{1,40}-[0-9a-f]{12}\.(?:json|txt)"
_NAME = re.compile(NAME_PATTERN)
_POINTER = re.compile(r"artifact:(" + NAME_PATTERN + r")(?![A-Za-z0-9_.-])")


def marker(name: str) -> str:
    """The pointer text for an artifact name (`artifact:<name>`)."""
    return POINTER_PREFIX + name


def find_pointer(text: str) -> str | None:
    """The artifact name of the first pointer in `text`, or None."""
    found = _POINTER.search(text) if isinstance(text, str) else None
    return found.group(1) if found else None


def is_artifact_name(name: str) -> bool:
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def artifact_name(tool_name: str, text: str, *, is_json: bool) -> str:
    """`<sanitized tool name>-<12 hex of sha256(text)>.<json|txt>`, pure and deterministic."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", tool_name or "result")[:40] or "result"
    digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:12]
    return f"{safe}-{digest}.{'json' if is_json else 'txt'}"


def resolve_artifact(root: str | Path, name: str) -> Path:
    """The file of artifact `name` in any run folder under `root`, newest folder first.

    Refuses (ValueError) anything that is not a plain artifact name, and any file
    that is a symlink or resolves outside `root`; FileNotFoundError if absent.
    Content-hash names make any folder that holds the name hold the same bytes.
    """
    if not is_artifact_name(name):
        raise ValueError(f"not an artifact name: {name!r} (expected something like tool-0123456789ab.json)")
    base = Path(root)
    if not base.is_dir():
        raise FileNotFoundError(f"no artifact store at {base}")
    real_base = base.resolve()
    for folder in _run_folders(base):
        candidate = folder / name
        if not candidate.exists() and not candidate.is_symlink():
            continue
        if candidate.is_symlink() or not candidate.is_file():
            raise ValueError(f"refused: {name} is not a regular file in the store")
        if not candidate.resolve().is_relative_to(real_base):
            raise ValueError(f"refused: {name} resolves outside the store")
        return candidate
    raise FileNotFoundError(f"no artifact named {name} under {base}")


def _run_folders(root: Path) -> list[Path]:
    """Run folders under `root` (ours: they hold an index), newest first."""
    found = []
    try:
        for entry in root.iterdir():
            if entry.is_dir() and not entry.is_symlink() and (entry / INDEX_FILE).exists():
                found.append((entry.stat().st_mtime, entry.name, entry))
    except OSError:
        return []
    return [entry for _, _, entry in sorted(found, reverse=True)]


def cleanup_runs(root: str | Path, keep: int, *, current: Path | None = None) -> list[Path]:
    """Delete the oldest run folders under `root` beyond the newest `keep`; returns them.

    Only folders this store created are candidates, symlinks are never followed,
    and `current` is never deleted.
    """
    if keep < 1:
        return []
    removed = []
    for folder in _run_folders(Path(root))[keep:]:
        if current is not None and folder.resolve() == current.resolve():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


class ArtifactStore:
    """One run's folder of full results, with an index by `tool_use_id`."""

    def __init__(
        self,
        folder: str | Path,
        *,
        max_bytes: int = 10_000_000,
        max_total_bytes: int = 200_000_000,
        keep_runs: int = 20,
    ) -> None:
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        """Largest artifact stored; a larger result is stored truncated, with a last line saying so."""
        self.max_total_bytes = max_total_bytes
        """Largest total for the folder; past it new results are not stored (and not cut-pointed)."""
        self.keep_runs = keep_runs
        """Run folders kept beside this one (older ones are deleted when this one is created)."""
        self._lock = threading.Lock()
        self._index: dict[str, str] | None = None
        self._total: int | None = None

    @classmethod
    def for_run(cls, root: str | Path, run_id: str, **options: int) -> ArtifactStore:
        """The store of run `run_id` under `root` (nothing is written until the first `put`)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id).lstrip(".") or "run"
        return cls(Path(root) / safe, **options)

    # -- writing --------------------------------------------------------------------

    def put(self, name: str, text: str, *, tool_use_id: str | None = None) -> bool:
        """Store `text` as `name` (idempotent) and index it; False if a cap refused it."""
        if not is_artifact_name(name):
            raise ValueError(f"not an artifact name: {name!r}")
        data = text.encode("utf-8", errors="replace")
        if len(data) > self.max_bytes:
            note = f"\n[artifact truncated: first {self.max_bytes:,} of {len(data):,} bytes kept]\n"
            data = data[: self.max_bytes].decode("utf-8", errors="ignore").encode() + note.encode()
        with self._lock:
            self._open()
            target = self.folder / name
            if not target.exists():
                if self._used() + len(data) > self.max_total_bytes:
                    return False
                self._write_atomic(target, data)
                self._total = self._used() + len(data)
            if tool_use_id:
                self._append_index(tool_use_id, name)
        return True

    def _open(self) -> None:
        if (self.folder / INDEX_FILE).exists():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / INDEX_FILE).touch()
        cleanup_runs(self.folder.parent, self.keep_runs, current=self.folder)

    def _used(self) -> int:
        if self._total is None:
            self._total = sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file())
        return self._total

    def _write_atomic(self, target: Path, data: bytes) -> None:
        fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    def _append_index(self, tool_use_id: str, name: str) -> None:
        index = self._load_index()
        if index.get(tool_use_id) == name:
            return
        index[tool_use_id] = name
        line = json.dumps({"id": tool_use_id, "name": name}, ensure_ascii=False) + "\n"
        with open(self.folder / INDEX_FILE, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()

    # -- reading --------------------------------------------------------------------

    def name_for(self, tool_use_id: str) -> str | None:
        """The artifact holding the full result of `tool_use_id`, if one was stored."""
        with self._lock:
            return self._load_index().get(tool_use_id)

    def path_of(self, name: str) -> Path:
        """The file of `name`, searched in this run first, then in the other runs of the root."""
        if not is_artifact_name(name):
            raise ValueError(f"not an artifact name: {name!r}")
        own = self.folder / name
        if own.is_file() and not own.is_symlink():
            return own
        return resolve_artifact(self.folder.parent, name)

    def read(self, name: str) -> str:
        return self.path_of(name).read_text(encoding="utf-8", errors="replace")

    def _load_index(self) -> dict[str, str]:
        if self._index is None:
            self._index = {}
            try:
                lines = (self.folder / INDEX_FILE).read_text(encoding="utf-8").splitlines()
            except OSError:
                lines = []
            for line in lines:
                try:
                    entry = json.loads(line)
                    self._index[str(entry["id"])] = str(entry["name"])
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line after a crash: skip it
        return self._index
