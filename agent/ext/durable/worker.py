"""A worker process: import the agents, launch DBOS, take runs off the queue until stopped.

    python -m agent.ext.durable.worker --db postgresql://... --agents my_app.agents \\
        --executor-id worker-1 [--worker-concurrency 4] [--starts-per-s 50] [--create-db]

`--agents` names a module that calls `register_agent` on import. Give each worker its own
`--executor-id`; start a worker with a dead worker's id to recover that worker's runs.
SIGTERM or Ctrl-C stops it (a run cut off there is recovered like a killed worker's).

A worker starts only on a database that exists (`--create-db` makes it): DBOS would create
a misspelt one silently, and the worker would wait on an empty queue while the runs sit in
the real one. A URL it cannot use ends the worker with one line saying why.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import threading
from types import FrameType

from agent.ext.durable.runtime import (
    DEFAULT_QUEUE,
    DatabaseProblem,
    check_database,
    launch,
    queue_for,
    register_queue,
    registered,
    shutdown,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m agent.ext.durable.worker")
    parser.add_argument("--db", required=True, help="sqlite:///file.sqlite or postgresql://...")
    parser.add_argument("--agents", required=True, action="append", help="module(s) registering agents")
    parser.add_argument("--executor-id", required=True)
    parser.add_argument("--queue", default=DEFAULT_QUEUE)
    parser.add_argument("--worker-concurrency", type=int, default=4)
    parser.add_argument("--starts-per-s", type=int, default=None)
    parser.add_argument("--polling-interval-s", type=float, default=0.2)
    parser.add_argument("--create-db", action="store_true", help="create the database if it is missing")
    args = parser.parse_args(argv)
    try:
        check_database(args.db, create=args.create_db)
    except DatabaseProblem as problem:
        raise SystemExit(f"worker {args.executor_id}: {problem}") from None
    for module in args.agents:
        importlib.import_module(module)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    agents = registered()
    if not agents:
        raise SystemExit(f"worker {args.executor_id}: {', '.join(args.agents)} registered no agent")
    launch(args.db, executor_id=args.executor_id, listen=[queue_for(args.queue, a) for a in agents])
    register_queue(
        args.queue,
        worker_concurrency=args.worker_concurrency,
        starts_per_period=args.starts_per_s,
        polling_interval_s=args.polling_interval_s,
    )
    print(f"worker {args.executor_id} ready", flush=True)
    stop.wait()
    shutdown()


if __name__ == "__main__":
    main()
