"""The run the kill trials kill: a 14-page order audit with irreversible calls in it.

The model (`policy`) decides from the request alone (the pages it has read, the calls
of the last turn, the summary of a compaction), so a resumed run goes on where its
history says it is, as a real model would. After some pages it refunds an order or
revokes a leaked key (irreversible; each one appends a line to `refunds.log`, the side
effect the trials count), and twice it asks again for something it already did, as if
compaction had made it forget. `life(workdir, mode)` is one process's run or resume.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent import Agent, tool
from agent.anthropic_llm import split_betas
from agent.ext.approval import Approval
from agent.ext.sessions import Session, resume
from agent.llm import LLM
from agent.messages import blocks, content_text
from agent.testing.simulator import MessagesSimulator
from agent.testing.validate import validate_request

PAGES = 14
LEAKED = "sk-ant-admin01-" + "Qw3" * 12
ACTIONS: dict[int, list[tuple[str, dict[str, str]]]] = {  # after reading page N, the model does these
    3: [("refund", {"order_id": "03-007"})],
    5: [("revoke_key", {"key": LEAKED})],  # a secret in an irreversible call's input
    7: [("refund", {"order_id": "07-007"})],
    9: [("refund", {"order_id": "03-007"})],  # forgot it refunded this already
    11: [("refund", {"order_id": "11-007"})],
    12: [("revoke_key", {"key": LEAKED})],  # and forgot this one too
}
IRREVERSIBLE_CALLS = sum(len(calls) for calls in ACTIONS.values())
API_KEY = "sk-ant-api03-" + "kT9" * 22  # configured in the workers: it must never reach the file
PROMPT = (
    f"Audit all {PAGES} pages of orders; refund each broken order exactly once, then report. "
    f"A customer pasted their key, {LEAKED}: revoke it. (Ours is {API_KEY}: never repeat it.)"
)
FINAL = "Audit done."
MODEL = "claude-opus-5-5"
CONTEXT = 3_000


def make_tools(workdir: Path) -> list[Any]:
    @tool(compress=False)
    def fetch_page(page: int) -> str:
        """One page of orders.

        Args:
            page: from 1.
        """
        time.sleep(0.005)
        rows = [f"{page:02d}-{i:03d} item {i} {'broken' if i == 7 else 'delivered'}" for i in range(30)]
        return f"PAGE {page} OF {PAGES}\n" + "\n".join(rows)

    @tool(irreversible=True)
    def refund(order_id: str) -> str:
        """Refund one order (irreversible).

        Args:
            order_id: the order.
        """
        fd = os.open(workdir / "refunds.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{order_id}\n".encode())
        finally:
            os.close(fd)
        time.sleep(0.02)  # the money left; the result is not recorded yet
        return f"refunded {order_id}"

    @tool(irreversible=True)
    def revoke_key(key: str) -> str:
        """Revoke a leaked API key (irreversible).

        Args:
            key: the key.
        """
        fd = os.open(workdir / "refunds.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"revoke:{key}\n".encode())
        finally:
            os.close(fd)
        time.sleep(0.02)
        return "revoked"

    return [fetch_page, refund, revoke_key]


# -- the model: decides from the request alone, so a resumed run goes on where it was ------------

_PAGE = re.compile(r"(?:PAGE|LAST PAGE READ:) (\d+)")


def progress(messages: list[Mapping[str, Any]]) -> int:
    seen = [0]
    for message in messages:
        for block in blocks(dict(message)):
            if block.get("type") == "tool_use" and block.get("name") == "fetch_page":
                seen.append(int(block.get("input", {}).get("page", 0)))
            text = block.get("text") if block.get("type") == "text" else None
            if block.get("type") == "tool_result":
                text = content_text(block.get("content"))
            seen.extend(int(n) for n in _PAGE.findall(text or ""))
    return max(seen)


def call(name: str, **input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": input}


def policy(body: Mapping[str, Any]) -> Any:
    messages = list(body["messages"])
    done = progress(messages)
    last = [b for b in blocks(dict(messages[-2])) if b.get("type") == "tool_use"] if len(messages) > 1 else []
    pages = [int(b["input"]["page"]) for b in last if b.get("name") == "fetch_page"]
    actions = [call(name, **input) for p in pages for name, input in ACTIONS.get(p, [])]
    if actions:
        return {"content": ["Acting on what that page showed.", *actions]}
    if done >= PAGES:
        return FINAL
    fetch = [call("fetch_page", page=done + 1)]
    if (done + 1) % 4 == 0 and done + 2 <= PAGES:
        fetch.append(call("fetch_page", page=done + 2))  # two pages at once
    return {"content": [f"Reading page {done + 1}.", *fetch]}


def summarizer(body: Mapping[str, Any]) -> str:
    return f"Auditing orders. LAST PAGE READ: {progress(list(body['messages']))}."


class Checked:
    """The simulator's client, validating every request before it goes out (and noting
    the refused ones in a file, so a worker killed later still told us)."""

    def __init__(self, llm: LLM, log: Path) -> None:
        self.llm, self.log = llm, log

    def create(self, request: Mapping[str, Any]) -> Any:
        problems = validate_request(split_betas(request)[0])
        if problems:
            with self.log.open("a") as out:
                out.write(json.dumps(problems) + "\n")
        return self.llm.create(request)


# -- one life of the run, in a forked child -----------------------------------------------------


def life(workdir: Path, mode: str) -> None:
    """Run (or resume) the audit; never returns (the child exits)."""
    report: dict[str, Any] = {}
    os.environ["ANTHROPIC_API_KEY"] = API_KEY  # the simulator client passes its own key
    logging.getLogger("agent").setLevel(logging.ERROR)  # ids reused after a restart are expected here
    sim = MessagesSimulator(policy, summarizer=summarizer)
    try:
        with sim:
            agent = Agent(
                llm=Checked(sim.llm(), workdir / "rejected.log"),
                model=MODEL,
                tools=make_tools(workdir),
                extensions=[Approval(allow=["refund", "revoke_key"])],
                keep_recent=2,
                prune_batch=1,
                max_context_tokens=CONTEXT,
                artifacts_dir=None,
                max_steps=200,
            )
            (workdir / "ready").touch()
            session = workdir / "run.jsonl"
            again = mode == "run" or not started(session)  # killed before its first record: nothing
            result = agent.run(PROMPT, extensions=[Session(session)]) if again else resume(agent, session)
            report = {"text": result.text}
    except BaseException as error:
        report = {"error": f"{type(error).__name__}: {error}"[:2000]}
    report.update(rejected=len(sim.rejected), errors=len(sim.errors))
    (workdir / f"report-{mode}-{os.getpid()}.json").write_text(json.dumps(report))
    os._exit(0)


def started(session: Path) -> bool:
    """Whether the session holds at least one whole record (its `start`): a run killed before
    that has nothing to resume, and what a user does then is start it again."""
    return session.exists() and b"\n" in session.read_bytes()


def answers(call: Mapping[str, Any], text: str) -> bool:
    """Whether `text` is a result of `call` (and not another call's, say one with the same id)."""
    name, input = call["name"], call["input"]
    if name == "fetch_page":
        return text.startswith(f"PAGE {input['page']} OF")
    done = "revoked" if name == "revoke_key" else f"refunded {input.get('order_id')}"
    return text == done or text.startswith((f"already done: {name}", f"outcome unknown: {name}"))
