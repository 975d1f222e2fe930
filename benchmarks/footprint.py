"""How much of the package a run loads: modules and lines, plain and with every core feature.

    python -m benchmarks.footprint            # a table
    python -m benchmarks.footprint --json     # one JSON line

Each scenario runs in a fresh interpreter, so nothing loaded by one is counted for the
other. The model behind the seam is a few lines defined here (it returns SDK `Message`
objects), so the test kit is not loaded either: what is counted is what the framework
itself needs for the run. A module counts once it is in `sys.modules`; its lines are the
lines of its file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

SCENARIOS = {
    "plain": """
        model = Model([call("add", {"a": 1, "b": 2}), answer("3")])
        agent = Agent(llm=model, tools=[add], artifacts_dir=folder)
        agent.run("What is 1 + 2?")
    """,
    "core features": """
        from agent import Memory
        memory = Memory()
        memory.write("customer", "C-1042")
        script = [call("logs", {"page": i}) for i in range(8)] + [answer("done")]
        agent = Agent(
            llm=Model(script, summary="the logs were read"),
            tools=[add, logs],
            artifacts_dir=folder,
            max_context_tokens=6_000,
            keep_recent=2,
            prune_batch=1,
            memory=memory,
            thinking={"type": "adaptive", "display": "summarized"},
            effort="high",
            max_cost_usd=5.0,
            max_input_tokens=1_000_000,
        )
        agent.run("Read the logs and tell me what failed.")
    """,
}

PRELUDE = """
import sys, tempfile
from anthropic.types import Message
from agent import Agent, tool

@tool
def add(a: int, b: int) -> int:
    '''Add two numbers.

    Args:
        a: the first.
        b: the second.
    '''
    return a + b

@tool
def logs(page: int) -> str:
    '''One page of the service log.

    Args:
        page: which page.
    '''
    return "\\n".join(f"2026-11-30T10:{i % 60:02d}:00 INFO worker {page}-{i} handled request id={i * 7919}"
                      for i in range(400)) + "\\nERROR worker 3 crashed: disk full"

def call(name, arguments):
    return ("tool_use", name, arguments)

def answer(text):
    return ("text", text)

class Model:
    '''A scripted model: one reply per call (a summary request gets `summary`).'''

    def __init__(self, script, summary="summary"):
        self.script, self.summary, self.calls = list(script), summary, 0

    def create(self, request):
        if not request.get("tools") and self.summary and "handover" in str(request["messages"])[-3000:]:
            kind, content = "text", self.summary
        else:
            kind, *content = self.script.pop(0)
        if kind == "tool_use":
            self.calls += 1
            name, arguments = content
            block = {"type": "tool_use", "id": f"toolu_{self.calls:04d}", "name": name, "input": arguments}
            stop = "tool_use"
        else:
            text = content if isinstance(content, str) else content[0]
            block, stop = {"type": "text", "text": text}, "end_turn"
        return Message.model_validate({
            "id": "msg_1", "type": "message", "role": "assistant", "model": request["model"],
            "content": [block], "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 10},
        })

folder = tempfile.mkdtemp()
"""

REPORT = """
names = sorted(m for m in sys.modules if m == "agent" or m.startswith("agent."))
files = [sys.modules[m].__file__ for m in names if getattr(sys.modules[m], "__file__", None)]
lines = sum(sum(1 for _ in open(f)) for f in files)
print(json.dumps({"modules": len(names), "lines": lines, "names": names}))
"""


def measure(scenario: str) -> dict[str, object]:
    code = "import json\n" + PRELUDE + textwrap.dedent(SCENARIOS[scenario]) + REPORT
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{scenario}: the run failed\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    parser.add_argument("--names", action="store_true", help="also list the modules each run loads")
    args = parser.parse_args(argv)
    found = {name: measure(name) for name in SCENARIOS}
    if args.json:
        print(json.dumps({name: {"modules": r["modules"], "lines": r["lines"]} for name, r in found.items()}))
        return
    print("| run | package modules loaded | their lines |")
    print("|---|--:|--:|")
    for name, r in found.items():
        print(f"| {name} | {r['modules']} | {r['lines']:,} |")
    if args.names:
        for name, r in found.items():
            print(f"\n{name}: {' '.join(r['names'])}")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
