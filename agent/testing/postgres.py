"""A throwaway local Postgres for tests, CI and the scale benchmark: Debian's own server.

`LocalPostgres()` finds Debian's binaries (`/usr/lib/postgresql/<version>/bin`; it never
installs them: `.ci/run` does, and without them it says so), initialises a cluster in a
temp folder (as the `postgres` user when we are root: the server refuses to run as root),
starts it on a free localhost port, and stops it and deletes the folder afterwards.
`fast=True` turns fsync off: it serves tests and the benchmark, which kill worker
processes, never the database or the machine.

    with LocalPostgres() as pg:
        launch(pg.url)
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

__all__ = ["LocalPostgres", "ensure_installed", "postgres_bin"]


def postgres_bin() -> Path | None:
    """The newest installed Debian Postgres `bin` folder, if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[4]))
    return Path(found[-1]).parent if found else None


def ensure_installed() -> Path:
    """Debian's Postgres binaries; a clear error when they are missing (this kit never
    installs software: `.ci/run` installs the `postgresql` package where it runs)."""
    if (found := postgres_bin()) is None:
        raise RuntimeError(
            "Postgres is not installed (no /usr/lib/postgresql/*/bin/pg_ctl): "
            "apt-get install postgresql, or run only the SQLite tests"
        )
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class LocalPostgres:
    """One Postgres server in a temp folder on a free localhost port (user `postgres`, trust auth)."""

    def __init__(self, *, fast: bool = True) -> None:
        self.fast = fast
        self.port = 0
        self.folder: Path | None = None
        self._as_user: list[str] = []

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def database_url(self, name: str) -> str:
        """A URL naming database `name` on this server (DBOS creates it on launch)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def start(self) -> LocalPostgres:
        bin_dir = ensure_installed()
        self.folder = Path(tempfile.mkdtemp(prefix="agent-pg-"))
        self.folder.chmod(0o755)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
            self._as_user = ["runuser", "-u", "postgres", "--"]
        data = self.folder / "data"
        self._run([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"])
        self.port = _free_port()
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c max_connections=200"
        if self.fast:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        log = self.folder / "server.log"
        self._run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        return self

    def stop(self) -> None:
        if self.folder is None:
            return
        bin_dir = postgres_bin()
        data = self.folder / "data"
        if bin_dir is not None and (data / "postmaster.pid").exists():
            self._run(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], check=False
            )
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None

    def _run(self, command: list[str], check: bool = True) -> None:
        done = subprocess.run([*self._as_user, *command], capture_output=True, text=True, cwd="/")
        if check and done.returncode != 0:
            raise RuntimeError(f"{Path(command[0]).name} failed ({done.returncode}): {done.stderr[-2000:]}")

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
