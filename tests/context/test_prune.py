"""Keep-recent pruning: stubs that keep pairs valid, protected results, batches, idempotence."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from agent import Agent, tool
from agent.context.artifacts import find_pointer, read_artifact_text
from agent.context.prune import STUB_PREFIX, is_stub, prunable_turns, prune
from agent.messages import Msg
from agent.testing import ScriptedLLM, reply, tool_use, validate_request
from agent.tools import ToolRegistry

BIG = "x" * 2000


def turn(i: int, name: str = "search", content: str = BIG, **input: Any) -> list[Msg]:
    """One assistant tool call and its result."""
    use = {"type": "tool_use", "id": f"t{i}", "name": name, "input": input or {"q": f"query {i}"}}
    result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": content}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]


def history(*turns: list[Msg]) -> list[Msg]:
    first: Msg = {"role": "user", "content": [{"type": "text", "text": "find the thing " + BIG}]}
    return [first, *(m for t in turns for m in t)]


def result_content(messages: list[Msg], index: int) -> Any:
    return messages[index]["content"][0]["content"]


def request(messages: list[Msg]) -> dict[str, Any]:
    return {"model": "claude-opus-5", "max_tokens": 100, "messages": messages}


def test_old_results_become_stubs_and_recent_ones_stay() -> None:
    messages = history(*(turn(i) for i in range(5)))
    pruned = prune(messages, keep_recent=2)
    # results live at 2, 4, 6, 8, 10: the first three are old
    assert [is_stub(result_content(pruned, i)) for i in (2, 4, 6, 8, 10)] == [True, True, True, False, False]
    assert result_content(pruned, 10) == BIG
    assert validate_request(request(pruned)) == []


def test_stub_keeps_size_and_pointer_and_leaves_the_call_to_its_tool_use() -> None:
    messages = history(turn(0, "search_orders", customer_id="u_88213"), turn(1), turn(2))
    pruned = prune(messages, keep_recent=1, pointer_for=lambda use_id: f"artifact://{use_id}.json")
    stub = result_content(pruned, 2)
    assert stub == f"{STUB_PREFIX}2,000 chars; full: artifact://t0.json]"
    assert pruned[1]["content"][0]["input"] == {"customer_id": "u_88213"}  # the call, just before it
    unstored = result_content(prune(messages, keep_recent=1), 2)
    assert unstored == f"{STUB_PREFIX}2,000 chars; call again if you need it]"
    failed = history(turn(0, content="ValueError: no such order\n" + BIG), turn(1))
    failed[2]["content"][0]["is_error"] = True
    error = result_content(prune(failed, keep_recent=1), 2)
    assert error == f"{STUB_PREFIX}failed, 2,026 chars: ValueError: no such order; call again if you need it]"


def test_blocks_ids_and_is_error_flags_stay() -> None:
    messages = history(turn(0), turn(1))
    messages[2]["content"][0]["is_error"] = True
    pruned = prune(messages, keep_recent=1)
    block = pruned[2]["content"][0]
    assert block["tool_use_id"] == "t0" and block["is_error"] is True and block["type"] == "tool_result"
    assert "failed" in block["content"] and "xxx" in block["content"]  # an error keeps its first line
    assert set(block) == {"type", "tool_use_id", "content", "is_error"}


def test_input_list_and_dicts_are_not_mutated() -> None:
    messages = history(*(turn(i) for i in range(4)))
    before = copy.deepcopy(messages)
    pruned = prune(messages, keep_recent=1)
    assert messages == before
    assert pruned is not messages
    assert pruned != messages


def test_pruning_is_idempotent() -> None:
    messages = history(*(turn(i) for i in range(6)))
    once = prune(messages, keep_recent=2, batch=2)
    assert prune(once, keep_recent=2, batch=2) == once


def test_never_prune_and_irreversible_results_are_kept_verbatim() -> None:
    @tool(never_prune=True)
    def read_spec(path: str) -> str:
        """Read a spec.

        Args:
            path: file.
        """
        return ""

    @tool(irreversible=True)
    def refund(order_id: str) -> str:
        """Refund an order.

        Args:
            order_id: the order.
        """
        return ""

    tools = ToolRegistry([read_spec, refund])
    protected = frozenset(
        t.name for t in tools if t.irreversible or t.never_prune
    ).__contains__  # as the agent does
    messages = history(turn(0, "read_spec"), turn(1, "refund"), turn(2, "search"), turn(3), turn(4))
    pruned = prune(messages, keep_recent=1, protected=protected)
    assert result_content(pruned, 2) == BIG
    assert result_content(pruned, 4) == BIG
    assert is_stub(result_content(pruned, 6))


def test_results_smaller_than_their_stub_are_left_alone() -> None:
    messages = history(turn(0, content="ok"), turn(1), turn(2))
    pruned = prune(messages, keep_recent=1)
    assert result_content(pruned, 2) == "ok"
    assert is_stub(result_content(pruned, 4))


def test_first_message_is_never_touched_and_zero_keeps_everything() -> None:
    messages = history(*(turn(i) for i in range(3)))
    assert prune(messages, keep_recent=0) == messages
    assert prune(messages, keep_recent=1)[0] is messages[0]


def test_batch_waits_until_enough_turns_are_prunable_then_prunes_them_all() -> None:
    messages = history(*(turn(i) for i in range(4)))  # keep 2 -> 2 prunable
    assert prune(messages, keep_recent=2, batch=3) == messages
    assert prunable_turns(messages, 2) == [2, 4]
    more = history(*(turn(i) for i in range(5)))  # 3 prunable
    pruned = prune(more, keep_recent=2, batch=3)
    assert [is_stub(result_content(pruned, i)) for i in (2, 4, 6, 8, 10)] == [True, True, True, False, False]


def test_list_content_and_parallel_results_are_pruned_per_block() -> None:
    uses = [{"type": "tool_use", "id": f"p{i}", "name": "fetch", "input": {"url": f"u{i}"}} for i in range(3)]
    results = [
        {"type": "tool_result", "tool_use_id": "p0", "content": [{"type": "text", "text": BIG}]},
        {"type": "tool_result", "tool_use_id": "p1", "content": "small"},
        {"type": "tool_result", "tool_use_id": "p2", "content": BIG},
    ]
    messages = history(
        [{"role": "assistant", "content": uses}, {"role": "user", "content": results}], turn(9)
    )
    pruned = prune(messages, keep_recent=1)
    contents = [b["content"] for b in pruned[2]["content"]]
    assert is_stub(contents[0]) and contents[1] == "small" and is_stub(contents[2])
    assert validate_request(request(pruned)) == []


def test_agent_prunes_in_batches_and_the_prefix_moves_only_on_a_batch() -> None:
    @tool(compress=False)  # big results are the point here, not the diet
    def lookup(n: int) -> str:
        """Look up a large record.

        Args:
            n: which record.
        """
        return json.dumps({"n": n, "blob": "y" * 3000})

    script = [reply(tool_use("lookup", {"n": i}, id=f"c{i}")) for i in range(8)] + [reply("done")]
    llm = ScriptedLLM(script)
    # no cache: with one, a batch inside this short opening would wait for the history to grow
    Agent(llm=llm, tools=[lookup], keep_recent=2, prune_batch=3, artifacts_dir=None, cache=False).run("go")
    stubbed = [
        sum(
            is_stub(b.get("content"))
            for m in r["messages"]
            for b in m["content"]
            if isinstance(m["content"], list)
        )
        for r in llm.requests
    ]
    # requests 1..9 carry 0..8 results; old = results beyond the newest 2; a batch needs 3
    assert stubbed == [0, 0, 0, 0, 0, 3, 3, 3, 6]
    assert all(validate_request(r) == [] for r in llm.requests)


def test_a_pointer_in_the_result_text_is_kept_in_the_stub() -> None:
    cut_note = "[cut: 40 more rows; full result: artifact:search-0123456789ab.json]"
    messages = history(turn(0, content=BIG + cut_note), turn(1))
    stub = result_content(prune(messages, keep_recent=1), 2)
    assert is_stub(stub) and "artifact:search-0123456789ab.json" in stub


def test_stubs_point_at_the_artifacts_the_diet_stored(tmp_path: Path) -> None:
    @tool
    def rows(n: int) -> list[dict[str, Any]]:
        """Many rows.

        Args:
            n: which page.
        """
        return [{"id": f"{n}-{i}", "note": "z" * 80} for i in range(60)]

    script = [reply(tool_use("rows", {"n": i}, id=f"r{i}")) for i in range(4)] + [reply("done")]
    llm = ScriptedLLM(script)
    Agent(llm=llm, tools=[rows], keep_recent=1, prune_batch=1, artifacts_dir=tmp_path, cache=False).run("go")
    last = llm.requests[-1]["messages"]
    stubs = [b["content"] for m in last for b in m["content"] if is_stub(b.get("content"))]
    assert len(stubs) == 3
    for stub in stubs:
        name = find_pointer(stub)
        assert name is not None and name.startswith("rows-")
        assert read_artifact_text(tmp_path, name)[0].startswith('[{"id"'), f"{name} is not in the store"
