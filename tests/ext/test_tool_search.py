"""Tool search, offline: ranking (fielded BM25, steps, fusion), deferrals, the search tool.

The index is judged on real-looking declarations (the benchmark's data); the graph on a
case built so that only its link can find the second tool of a workflow.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, RunState, tool
from agent.ext.tool_search import (
    SEARCH_TOOL_NAME,
    ToolIndex,
    ToolSearch,
    Weights,
    find_tools,
    reference_blocks,
    server_search_tool,
)
from agent.ext.tool_search.deferral import search_function, search_tool
from agent.ext.tool_search.index import LEGACY, steps
from agent.ext.tool_search.text import split_identifier, words
from agent.ext.tool_search.thesaurus import expand
from agent.testing import ScriptedLLM, reply
from agent.tool_runs import run_one
from agent.tools import ServerTool, Tool, ToolCall, ToolOutcome, ToolRegistry

DATA = Path(__file__).parents[2] / "benchmarks" / "tool_search_data"
DECLARATIONS: list[dict[str, Any]] = json.loads((DATA / "tools.json").read_text())


def make_tool(declaration: dict[str, Any], defer: bool | None = None) -> Tool:
    """A runnable tool named and described like `declaration`, echoing its one argument."""
    name = declaration["name"]

    def run(target: str) -> str:
        return f"{name} did {target}"

    return tool(name=name, description=declaration["description"], defer=defer)(run)


def many(n: int) -> list[Tool]:
    return [make_tool(d) for d in DECLARATIONS[:n]]


# -- words ---------------------------------------------------------------------------


def test_identifiers_split_at_underscores_dashes_and_humps() -> None:
    assert split_identifier("getPullRequestDiff") == ["get", "pull", "request", "diff"]
    assert split_identifier("crm_update-deal.stage") == ["crm", "update", "deal", "stage"]
    assert split_identifier("HTTPServerLogs") == ["http", "server", "logs"]


def test_words_are_stemmed_and_glue_words_dropped() -> None:
    assert words("Refunds of the refunded orders") == ["refund", "refund", "order"]


def test_thesaurus_adds_tool_words_for_everyday_ones() -> None:
    assert "issu" in expand(words("bug")) and "directori" in expand(words("folder"))
    assert expand(words("zzz")) == []


# -- ranking -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex(DECLARATIONS)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("restart the kubernetes deployment", "k8s_restart_deployment"),
        ("post a message in a slack channel", "slack_post_message"),
        ("getPullRequestDiff", "github_get_pull_request_diff"),
        ("refunds for charges in stripe", "stripe_refund_charge"),
    ],
)
def test_the_tool_a_query_describes_comes_first(index: ToolIndex, query: str, expected: str) -> None:
    assert index.search(query, 5)[0].name == expected


def test_a_query_in_everyday_words_finds_the_tool_through_the_thesaurus(index: ToolIndex) -> None:
    query = "put the new logo in the shared folder"
    assert "fs_create_directory" not in [h.name for h in index.keyword(query, 10, widen=False)]
    assert "drive_upload_file" in [h.name for h in index.search(query, 5)]


def test_near_duplicates_are_told_apart_by_the_family_the_query_names(index: ToolIndex) -> None:
    assert index.search("create a contact in hubspot", 1)[0].name == "hubspot_create_contact"
    assert index.search("create an issue in gitlab", 1)[0].name == "gitlab_create_issue"
    assert index.search("create an issue in jira", 1)[0].name == "jira_create_issue"


WORKFLOW = [
    {
        "name": "orders_cancel",
        "description": "Cancel an order that has not shipped.",
        "input_schema": {"type": "object", "properties": {"sale_ref": {"type": "string"}}},
    },
    {
        "name": "payments_issue_credit",
        "description": "Credit the buyer's card.",
        "input_schema": {"type": "object", "properties": {"sale_ref": {"type": "string"}}},
    },
    *(
        {
            "name": f"inventory_tool_{i}",
            "description": f"Adjust warehouse bin {i} counts.",
            "input_schema": {"type": "object", "properties": {"bin": {"type": "string"}}},
        }
        for i in range(12)
    ),
]


def test_graph_expansion_brings_the_tool_that_shares_an_identifying_parameter() -> None:
    # The graph is off by default since the real-tools benchmark (it crowded the top five
    # with one family's siblings); asked for, it still brings a workflow's second tool.
    query = "cancel order 10023"
    hybrid = ToolIndex(WORKFLOW, Weights(graph=0.5))
    assert "payments_issue_credit" not in [h.name for h in hybrid.keyword(query)]  # no word in common
    assert [h.name for h in hybrid.search(query, 2)] == ["orders_cancel", "payments_issue_credit"]
    default = ToolIndex(WORKFLOW)
    assert "payments_issue_credit" not in [h.name for h in default.search(query, 5)]


def test_generic_parameters_link_nothing() -> None:
    graph = ToolIndex(DECLARATIONS).graph
    assert "slack_post_message" not in graph.links.get("email_search", {})  # both take `query`-like args
    assert "shop_process_refund" in graph.links["shop_cancel_order"]  # both take order_id


def test_without_the_extra_the_index_says_which_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the old single-text ranking (`LEGACY`) still runs on rank-bm25; the default
    # fielded BM25 is the index's own and builds without it.
    monkeypatch.setitem(sys.modules, "rank_bm25", None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[toolsearch\]'"):
        ToolIndex(DECLARATIONS, LEGACY)
    assert ToolIndex(DECLARATIONS).search("list the slack channels", 1)[0].name == "slack_list_channels"


def declared(name: str, description: str, *params: str) -> dict[str, Any]:
    properties = {p: {"type": "string", "description": f"The {p.replace('_', ' ')}."} for p in params}
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": properties},
    }


def test_a_short_description_is_not_outweighed_by_a_long_one() -> None:
    # Real servers: filesystem's one-liners against Google Workspace's pages about files.
    long = " ".join(["Read, copy and share any file or folder in the drive; the file may be large."] * 12)
    tools = [
        declared("fs_read_text_file", "Read a text file.", "path"),
        *(declared(f"drive_tool_{i}", long, "file_id") for i in range(6)),
    ]
    assert ToolIndex(tools).search("read a text file", 1)[0].name == "fs_read_text_file"


def test_each_step_of_a_query_gets_its_tool() -> None:
    tools = [
        declared("kube_logs", "Get logs from a pod.", "pod"),
        declared("kube_rollout", "Restart or undo the rollout of a deployment.", "deployment"),
        *(
            declared(f"kube_pod_{verb}", f"{verb.title()} a pod's logs and pod status.", "pod")
            for verb in "abcdef"
        ),
    ]
    found = [h.name for h in ToolIndex(tools).search("read the pod logs, then restart the deployment", 5)]
    assert {"kube_logs", "kube_rollout"} <= set(found)
    assert [h.name for h in ToolIndex(tools, Weights(steps=False)).search("pod logs", 1)] == ["kube_logs"]
    assert steps("read the pod logs, then restart the deployment") == [
        "read the pod logs",
        "restart the deployment",
    ]


def test_the_core_tools_are_never_ranked() -> None:
    core = [
        declared(SEARCH_TOOL_NAME, "Search for tools.", "query"),
        declared("read_artifact", "Read an artifact."),
    ]
    index = ToolIndex([*core, *DECLARATIONS[:20]])
    assert SEARCH_TOOL_NAME not in index.names and "read_artifact" not in index.names
    assert find_tools([*core, *DECLARATIONS[:20]], "search for tools", 10)[:1] != [SEARCH_TOOL_NAME]
    assert not {SEARCH_TOOL_NAME, "read_artifact"} & set(find_tools(core, "read an artifact", 5))


def test_the_search_tool_asks_for_one_capability_at_a_time() -> None:
    description = str(search_tool([]).declaration()["description"])
    assert "one capability at a time" in description and "once per step" in description


def test_search_is_deterministic_and_bounded(index: ToolIndex) -> None:
    first = index.search("send an email with the report attached", 5)
    assert first == index.search("send an email with the report attached", 5) and len(first) == 5
    assert index.search("", 5) == [] and index.search("the of and", 5) == []
    assert index.search("email", 0) == []


# -- deferred declarations ---------------------------------------------------------------


def deferring(tools: list[Tool | ServerTool], **options: Any) -> ToolRegistry:
    """The registry an agent with `ToolSearch(**options)` builds from `tools`."""
    return ToolRegistry(ToolSearch(**options).tools(tools))


def test_at_or_below_the_threshold_nothing_is_deferred() -> None:
    registry = deferring([*many(30)])
    assert SEARCH_TOOL_NAME not in registry
    assert not any("defer_loading" in d for d in registry.declarations())


def test_above_the_threshold_all_but_the_core_are_deferred_and_a_search_tool_is_added() -> None:
    core = make_tool(DECLARATIONS[200], defer=False)
    registry = deferring([*many(31), core])
    declared = {d["name"]: d for d in registry.declarations()}
    assert len(declared) == 33
    loaded = sorted(n for n, d in declared.items() if not d.get("defer_loading"))
    assert loaded == sorted([SEARCH_TOOL_NAME, core.name])
    assert registry.get(SEARCH_TOOL_NAME) is not None and registry.get(SEARCH_TOOL_NAME).never_prune  # type: ignore[union-attr]
    assert [d["name"] for d in registry.declarations()] == sorted(declared)  # still sorted: stable


def test_defer_true_defers_below_the_threshold_and_none_disables() -> None:
    registry = deferring([*many(3), make_tool(DECLARATIONS[100], defer=True)])
    deferred = [d["name"] for d in registry.declarations() if d.get("defer_loading")]
    assert deferred == [DECLARATIONS[100]["name"]] and SEARCH_TOOL_NAME in registry
    assert not any("defer_loading" in d for d in deferring([*many(40)], defer_above=None).declarations())


def test_without_the_extension_nothing_is_deferred_however_many_tools() -> None:
    llm = ScriptedLLM([reply("done")])
    Agent(llm=llm, tools=many(40), artifacts_dir=None).run("hi")
    assert len(llm.requests[0]["tools"]) == 40 and SEARCH_TOOL_NAME not in str(llm.requests[0]["tools"])
    assert not any("defer_loading" in d for d in llm.requests[0]["tools"])


def test_an_agent_with_the_extension_declares_the_deferred_tools_and_the_search_tool() -> None:
    llm = ScriptedLLM([reply("done")])
    agent = Agent(llm=llm, tools=many(40), artifacts_dir=None, extensions=[ToolSearch()])
    agent.run("hi")
    tools = llm.requests[0]["tools"]
    assert [t["name"] for t in tools if not t.get("defer_loading")] == [SEARCH_TOOL_NAME]
    assert len(tools) == 41 and agent.registry.get(SEARCH_TOOL_NAME) is not None


def test_server_side_search_declares_the_api_tool_instead_of_ours() -> None:
    registry = deferring([*many(40)], mode="bm25")
    declared = registry.declarations()
    assert SEARCH_TOOL_NAME not in registry
    assert declared[-1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert server_search_tool("regex")["type"] == "tool_search_tool_regex_20251119"
    with pytest.raises(ValueError, match="tool_search must be"):
        server_search_tool("vector")
    with pytest.raises(ValueError, match="mode must be"):
        ToolSearch(mode="vector")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="defer_above must be an int"):
        ToolSearch(defer_above="30")  # type: ignore[arg-type]


def old_active(tools: list[Tool], threshold: int | None) -> bool:
    counted = sum(1 for t in tools if t.name != SEARCH_TOOL_NAME)
    over = threshold is not None and counted > threshold
    return any(t.defer and t.name != SEARCH_TOOL_NAME for t in tools) or over


def old_declare(tools: list[Tool], threshold: int | None, mode: str) -> list[dict[str, Any]]:
    """The function tools' declarations as the old registry made them (`declare` in
    agent/tool_search/deferral.py at 044e69f), kept here as the reference."""
    over = threshold is not None and sum(1 for t in tools if t.name != SEARCH_TOOL_NAME) > threshold
    declared = []
    for t in tools:
        deferred = t.defer is True or (over and t.defer is None and t.name != SEARCH_TOOL_NAME)
        declared.append({**t.declaration(), "defer_loading": True} if deferred else t.declaration())
    if mode != "client" and old_active(tools, threshold):
        declared.append(server_search_tool(mode))
    return declared


@pytest.mark.parametrize("mode", ["client", "bm25", "regex"])
@pytest.mark.parametrize("asked", [False, True])
@pytest.mark.parametrize(("count", "threshold"), [(3, 30), (30, 30), (31, 30), (60, 30), (40, None), (12, 5)])
def test_the_tools_list_is_byte_for_byte_the_old_registrys(
    count: int, threshold: int | None, asked: bool, mode: str
) -> None:
    functions = [*many(count), make_tool(DECLARATIONS[200], defer=False)]
    if asked:
        functions.append(make_tool(DECLARATIONS[201], defer=True))
    server = ServerTool({"type": "code_execution_20260521", "name": "code_execution"})
    new = deferring([*functions, server], defer_above=threshold, mode=mode).declarations()  # type: ignore[arg-type]

    old_tools = sorted(functions, key=lambda t: t.name)  # the old registry: its search tool added
    if mode == "client" and old_active(functions, threshold):
        search = search_function(lambda query, k: [])
        old_tools = sorted([*old_tools, tool(never_prune=True, defer=False)(search)], key=lambda t: t.name)
    old = sorted([*old_declare(old_tools, threshold, mode), server.declaration()], key=lambda d: d["name"])
    assert json.dumps(new) == json.dumps(old)


def test_find_tools_ranks_any_tools_and_covers_every_one() -> None:
    registry = deferring([*many(60)])
    assert find_tools(registry, "list the slack channels", 3)[0] == "slack_list_channels"
    assert len(find_tools(registry, "slack", 10)) == 10
    assert find_tools(DECLARATIONS[:60], "list the slack channels", 1) == ["slack_list_channels"]
    code = ServerTool({"type": "code_execution_20260521", "name": "code_execution"})
    with_server = ToolRegistry([*many(60), code])
    assert find_tools(with_server.all(), "list the slack channels", 1) == ["slack_list_channels"]


def test_the_search_tool_answers_with_tool_reference_blocks() -> None:
    registry = deferring([*many(60)])
    call = ToolCall("t1", SEARCH_TOOL_NAME, {"query": "reply in a slack thread", "limit": 3})
    outcome = run_one(registry, call)
    blocks = ToolSearch().render(outcome, RunState(messages=[]))
    assert blocks is not None and len(blocks) == 3 and blocks == reference_blocks(outcome)
    assert blocks[0] == {"type": "tool_reference", "tool_name": "slack_reply_in_thread"}
    deferred = {d["name"] for d in registry.declarations() if d.get("defer_loading")}
    assert {b["tool_name"] for b in blocks} <= deferred  # only tools the model cannot see yet


def test_the_search_tool_never_finds_itself_nor_read_artifact(tmp_path: Path) -> None:
    agent = Agent(llm=ScriptedLLM([]), tools=many(60), extensions=[ToolSearch()], artifacts_dir=tmp_path)
    assert "read_artifact" in agent.registry
    for query in ("search for tools", "find a tool", "read an artifact that was stored"):
        outcome = run_one(agent.registry, ToolCall("t1", SEARCH_TOOL_NAME, {"query": query, "limit": 10}))
        found = outcome.value if not outcome.is_error else []
        assert SEARCH_TOOL_NAME not in found and "read_artifact" not in found


def test_a_search_outcome_read_back_from_a_session_still_loads_its_tools() -> None:
    from agent.render import safe_text  # how a session records a value (bounded, as text)

    registry = deferring([*many(60)])
    outcome = run_one(registry, ToolCall("t1", SEARCH_TOOL_NAME, {"query": "reply in a slack thread"}))
    resumed = ToolOutcome(outcome.call, safe_text(outcome.value), False, tool=outcome.tool)
    assert reference_blocks(resumed) == reference_blocks(outcome) is not None
    broken = ToolOutcome(outcome.call, "not json", False, tool=outcome.tool)
    assert reference_blocks(broken) is None


def test_a_search_that_finds_nothing_is_an_error_result_in_words() -> None:
    registry = deferring([*many(60)])
    outcome = run_one(registry, ToolCall("t1", SEARCH_TOOL_NAME, {"query": "qqqq zzzz"}))
    assert outcome.is_error and "no tool matches" in str(outcome.value)
    assert reference_blocks(outcome) is None


def test_another_tools_list_result_is_not_taken_for_references() -> None:
    lister = tool(name="names", description="Some names.")(lambda: ["a", "b"])
    registry = ToolRegistry([lister])
    outcome = run_one(registry, ToolCall("t1", "names", {}))
    assert reference_blocks(outcome) is None and ToolSearch().render(outcome, RunState(messages=[])) is None
