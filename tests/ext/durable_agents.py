"""The agents the durable tests' worker processes run (`--agents tests.ext.durable_agents`).

Configured by environment: DURABLE_SIM_URL (the simulator in the test process) and
DURABLE_DIR (where the tools leave their side effects and markers).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from agent import Agent, tool
from agent.anthropic_llm import AnthropicLLM
from agent.ext.approval import Approval
from agent.ext.durable import WaitForApproval, register_agent


def side_effect(folder: Path, line: str) -> None:
    fd = os.open(folder / "side_effects.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def make_gated_agent(idempotent: bool = False) -> Agent:
    folder = Path(os.environ["DURABLE_DIR"])

    @tool(requires_approval=True)
    def refund(order: str) -> str:
        """Refund an order (a person approves it).

        Args:
            order: the order id.
        """
        side_effect(folder, f"refund {order}")
        return f"refunded {order}"

    @tool(irreversible=True)
    def ship(order: str) -> str:
        """Ship an order (irreversible).

        Args:
            order: the order id.
        """
        side_effect(folder, f"ship {order}")
        marker = folder / "ship.started"
        if not marker.exists():
            marker.touch()
            time.sleep(120)  # the test kills the worker here: shipped, result not recorded
        return f"shipped {order}"

    @tool(irreversible=True, name="ship")
    def ship_once(order: str, idempotency_key: str) -> str:
        """Ship an order (irreversible), through a carrier that ships once per key.

        Args:
            order: the order id.
        """
        booked = folder / f"carrier-{idempotency_key.replace(':', '_')}"
        if booked.exists():  # the carrier already took this key: the same shipment, not another
            return booked.read_text()
        side_effect(folder, f"ship {order}")
        booked.write_text(f"shipped {order}")
        marker = folder / "ship.started"
        if not marker.exists():
            marker.touch()
            time.sleep(120)  # the test kills the worker here: shipped, result not recorded
        return f"shipped {order}"

    llm = AnthropicLLM(base_url=os.environ["DURABLE_SIM_URL"], api_key="sim", max_retries=0)
    return Agent(
        llm=llm,
        model="claude-opus-4-5",
        tools=[refund, ship_once if idempotent else ship],
        extensions=[Approval(WaitForApproval(timeout_s=120), allow=["ship"])],  # only the refund waits
        artifacts_dir=None,
        max_steps=10,
    )


register_agent("gated", make_gated_agent)
register_agent("gated-idempotent", lambda: make_gated_agent(idempotent=True))
