"""The diet pipeline: policy per tool, artifacts for every non-trivial result, plain-text history."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from agent import Agent, tool
from agent.context.artifacts import find_pointer
from agent.context.diet import DietPolicy, render
from agent.testing import ScriptedLLM, reply, tool_use, validate_request

ORDERS = [
    {"order_id": f"A-{i}", "status": "delivered", "price": 1000 + i, "customer": {"name": "Lee", "id": "u1"}}
    | {f"extra_{j}": "x" * 20 for j in range(25)}
    for i in range(12)
]
BIG_TEXT = "\n".join(f"row {i} " + "data " * 10 for i in range(400))


# -- the pure pipeline ----------------------------------------------------------------------


def test_small_results_pass_untouched() -> None:
    assert render({"a": 1}) == '{"a":1}'
    assert render("hello") == "hello"
    assert render("") == "(empty)"


def test_results_over_the_threshold_are_compressed_and_point_at_the_artifact() -> None:
    out = render(BIG_TEXT, policy=DietPolicy(threshold=1000), pointer="run-0123456789ab.txt")
    assert len(out) <= 1000 and find_pointer(out) == "run-0123456789ab.txt"


def test_compress_false_keeps_results_exact_whatever_their_size() -> None:
    assert render(BIG_TEXT, policy=DietPolicy(compress=False, threshold=100)) == BIG_TEXT


def test_error_results_pass_through_and_are_bounded() -> None:
    short = "ValueError: order A-9 not found"
    assert render(short, is_error=True, policy=DietPolicy(keep=("order_id",))) == short
    long = "Traceback (most recent call last):\n" + '  File "/app/x.py", line 1, in f\n    g()\n' * 300
    long += "KeyError: 'payment_gateway'"
    out = render(long, is_error=True, policy=DietPolicy(threshold=500))
    assert len(out) <= 1000 and "KeyError: 'payment_gateway'" in out


def test_a_whitelisted_tool_gets_its_fields_even_when_small() -> None:
    out = json.loads(render(ORDERS[0], policy=DietPolicy(keep=("order_id", "customer.name"))))
    assert out["order_id"] == "A-0" and out["customer"] == {"name": "Lee"} and "price" not in out


def test_an_error_payload_is_not_whitelisted_away() -> None:
    out = render({"error": "order not found", "code": 404}, policy=DietPolicy(keep=("order_id",)))
    assert "order not found" in out


def test_a_whitelist_matching_nothing_falls_back_to_the_compressor() -> None:
    out = render({"unexpected": "shape"}, policy=DietPolicy(keep=("order_id",)))
    assert out == '{"unexpected":"shape"}'


def test_a_whitelisted_result_still_too_long_is_compressed() -> None:
    value = [{"order_id": f"A-{i}", "memo": "m" * 500} for i in range(10)]
    out = render(
        value,
        policy=DietPolicy(keep=("order_id", "memo"), top_n=8, threshold=1200),
        pointer="t-0123456789ab.json",
    )
    assert len(out) <= 1200 and json.loads(out) and find_pointer(out) == "t-0123456789ab.json"


# -- in the loop --------------------------------------------------------------------------------


@tool(keep=["order_id", "price", "customer.name"])
def search_orders(customer_id: str) -> list[dict[str, Any]]:
    """Find a customer's orders.

    Args:
        customer_id: the customer.
    """
    return ORDERS


@tool(compress=False)
def read_file(path: str) -> str:
    """Read a file about to be edited.

    Args:
        path: the file.
    """
    return BIG_TEXT


@tool
def run_command(command: str) -> str:
    """Run a command.

    Args:
        command: the command.
    """
    return BIG_TEXT


def run_agent(tmp_path: Path, *calls: dict[str, Any], **options: Any) -> tuple[Agent, Any, ScriptedLLM]:
    llm = ScriptedLLM([reply(*calls), reply("done")])
    options.setdefault("artifacts_dir", tmp_path / "artifacts")
    agent = Agent(llm=llm, tools=[search_orders, read_file, run_command], **options)
    return agent, agent.run("go"), llm


def results_of(result: Any) -> list[str]:
    return [b["content"] for b in result.messages[2]["content"]]


def test_the_loop_slims_compresses_and_keeps_exact_by_tool_policy(tmp_path: Path) -> None:
    _, result, llm = run_agent(
        tmp_path,
        tool_use("search_orders", {"customer_id": "u1"}, id="toolu_s"),
        tool_use("read_file", {"path": "a.py"}, id="toolu_f"),
        tool_use("run_command", {"command": "ls"}, id="toolu_c"),
        compress_threshold=1000,
    )
    searched, read, ran = results_of(result)
    slimmed = json.loads(searched)
    assert slimmed["total"] == 12 and len(slimmed["items"]) == 5
    assert slimmed["items"][0] == {"order_id": "A-0", "price": 1000, "customer": {"name": "Lee"}}
    assert read == BIG_TEXT, "compress=False: exact"
    assert len(ran) <= 1000 and "row 0 " in ran and "row 399 " in ran
    assert validate_request(llm.requests[1]) == [], "the history stays wire-clean"


def test_every_non_trivial_result_is_stored_and_indexed_by_tool_use_id(tmp_path: Path) -> None:
    _, result, _ = run_agent(
        tmp_path,
        tool_use("search_orders", {"customer_id": "u1"}, id="toolu_s"),
        tool_use("read_file", {"path": "a.py"}, id="toolu_f"),
    )
    store = next((tmp_path / "artifacts").iterdir())
    lines = [json.loads(line) for line in (store / "index.jsonl").read_text().splitlines()]
    stored = {line["name"] for line in lines if "at" in line}
    assert len(stored) == 2, "the uncut read_file result is stored too (pruned stubs point at it)"
    searched = results_of(result)[0]
    assert find_pointer(searched) in stored
    index = [json.loads(line) for line in (store / "index.jsonl").read_text().splitlines()]
    assert {e["id"] for e in index} == {"toolu_s", "toolu_f"}


def test_the_store_is_on_the_run_state_for_the_pruner(tmp_path: Path) -> None:
    states = []

    class Spy(Agent):
        def render_result(self, outcome: Any, state: Any) -> str:
            states.append(state)
            return super().render_result(outcome, state)

    llm = ScriptedLLM([reply(tool_use("read_file", {"path": "a"}, id="toolu_1")), reply("done")])
    Spy(llm=llm, tools=[read_file], artifacts_dir=tmp_path).run("go")
    store = states[0].artifacts
    assert store is not None and store.name_for("toolu_1") is not None
    assert store.read(store.name_for("toolu_1")) == BIG_TEXT
    assert store.folder == tmp_path / states[0].run_id


def test_read_artifact_is_offered_only_when_artifacts_are_on(tmp_path: Path) -> None:
    on = Agent(llm=ScriptedLLM([]), tools=[run_command], artifacts_dir=tmp_path)
    off = Agent(llm=ScriptedLLM([]), tools=[run_command], artifacts_dir=None)
    assert "read_artifact" in on.registry and "read_artifact" not in off.registry


def test_the_model_can_read_a_cut_result_back(tmp_path: Path) -> None:
    def read_back(request: dict[str, Any]) -> dict[str, Any]:
        name = find_pointer(request["messages"][-1]["content"][0]["content"])
        return reply(tool_use("read_artifact", {"name": name, "json_path": "[11].order_id"}, id="toolu_r"))

    llm = ScriptedLLM(
        [reply(tool_use("search_orders", {"customer_id": "u1"}, id="toolu_s")), read_back, reply("ok")]
    )
    result = Agent(llm=llm, tools=[search_orders], artifacts_dir=tmp_path).run("go")
    assert result.messages[4]["content"][0]["content"] == '"A-11"'


def test_a_read_back_slice_is_not_compressed_again(tmp_path: Path) -> None:
    def read_lines(request: dict[str, Any]) -> dict[str, Any]:
        name = find_pointer(request["messages"][-1]["content"][0]["content"])
        return reply(tool_use("read_artifact", {"name": name, "start_line": 1, "end_line": 80}, id="toolu_r"))

    llm = ScriptedLLM(
        [reply(tool_use("run_command", {"command": "ls"}, id="toolu_c")), read_lines, reply("ok")]
    )
    result = Agent(llm=llm, tools=[run_command], artifacts_dir=tmp_path, compress_threshold=1000).run("go")
    read = result.messages[4]["content"][0]["content"]
    assert len(read) > 1000 and read.startswith("[lines 1-") and find_pointer(read) is None


def test_without_artifacts_nothing_is_written_and_cuts_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _, result, _ = run_agent(
        tmp_path,
        tool_use("run_command", {"command": "ls"}, id="toolu_c"),
        artifacts_dir=None,
        compress_threshold=800,
    )
    assert "full result not kept" in results_of(result)[0]
    assert list(tmp_path.iterdir()) == []


def test_keep_fields_from_the_agent_or_a_subclass_win_over_the_decorator(tmp_path: Path) -> None:
    _, result, _ = run_agent(
        tmp_path,
        tool_use("search_orders", {"customer_id": "u1"}, id="toolu_s"),
        keep_fields={"search_orders": ["order_id"]},
    )
    assert json.loads(results_of(result)[0])["items"][0] == {"order_id": "A-0"}

    class Shop(Agent):
        keep_fields = MappingProxyType({"search_orders": ("price",)})
        list_top_n = 2

    llm = ScriptedLLM([reply(tool_use("search_orders", {"customer_id": "u1"}, id="toolu_s")), reply("done")])
    result = Shop(llm=llm, tools=[search_orders], artifacts_dir=tmp_path).run("go")
    assert json.loads(results_of(result)[0])["items"] == [{"price": 1000}, {"price": 1001}]


def test_diet_false_sends_results_whole_and_keeps_no_artifacts(tmp_path: Path) -> None:
    @tool
    def dump() -> str:
        """A big result."""
        return BIG_TEXT

    llm = ScriptedLLM([reply(tool_use("dump", {}, id="d1")), reply("ok")])
    Agent(llm=llm, tools=[dump], artifacts_dir=tmp_path, diet=False).run("go")
    [result] = [b for b in llm.requests[1]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["content"] == BIG_TEXT
    assert [t["name"] for t in llm.requests[0]["tools"]] == ["dump"]
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="compress_threshold"):
        Agent(llm=llm, compress_threshold=50)
