"""An MCP server that never answers: started over stdio, it writes its pid to the file named
by `PIDFILE` and then reads nothing and says nothing (it never answers `initialize`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

if __name__ == "__main__":
    Path(os.environ["PIDFILE"]).write_text(str(os.getpid()))
    while True:
        time.sleep(1)
