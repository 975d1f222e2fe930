"""Tool search, offline: ranking (BM25 + graph + fusion), deferred declarations, the search tool.

The index is judged on real-looking declarations (the benchmark's data); the graph on a
case built so that only its link can find the second tool of a workflow.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent import SEARCH_TOOL_NAME, Agent, ToolIndex, ToolRegistry, server_search_tool, tool
from agent.registry import Tool, ToolCall, ToolOutcome
from agent.tool_search import Weights, reference_blocks
from agent.tool_search.text import split_identifier, words
from agent.tool_search.thesaurus import expand

DATA = Path(__file__).parent.parent / "benchmarks" / "tool_search_data"
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
    query = "cancel order 10023"
    hybrid = ToolIndex(WORKFLOW)
    assert "payments_issue_credit" not in [h.name for h in hybrid.keyword(query)]  # no word in common
    assert [h.name for h in hybrid.search(query, 2)] == ["orders_cancel", "payments_issue_credit"]
    no_graph = ToolIndex(WORKFLOW, Weights(graph=0.0))
    assert "payments_issue_credit" not in [h.name for h in no_graph.search(query, 5)]


def test_generic_parameters_link_nothing() -> None:
    graph = ToolIndex(DECLARATIONS).graph
    assert "slack_post_message" not in graph.links.get("email_search", {})  # both take `query`-like args
    assert "shop_process_refund" in graph.links["shop_cancel_order"]  # both take order_id


def test_without_the_extra_the_index_says_which_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rank_bm25", None)
    with pytest.raises(ImportError, match=r"agent-from-scratch\[toolsearch\]"):
        ToolIndex(DECLARATIONS)


def test_search_is_deterministic_and_bounded(index: ToolIndex) -> None:
    first = index.search("send an email with the report attached", 5)
    assert first == index.search("send an email with the report attached", 5) and len(first) == 5
    assert index.search("", 5) == [] and index.search("the of and", 5) == []
    assert index.search("email", 0) == []


# -- deferred declarations ---------------------------------------------------------------


def test_at_or_below_the_threshold_nothing_is_deferred() -> None:
    registry = ToolRegistry(many(30))
    assert SEARCH_TOOL_NAME not in registry
    assert not any("defer_loading" in d for d in registry.declarations())


def test_above_the_threshold_all_but_the_core_are_deferred_and_a_search_tool_is_added() -> None:
    core = make_tool(DECLARATIONS[200], defer=False)
    registry = ToolRegistry([*many(31), core])
    declared = {d["name"]: d for d in registry.declarations()}
    assert len(declared) == 33
    loaded = sorted(n for n, d in declared.items() if not d.get("defer_loading"))
    assert loaded == sorted([SEARCH_TOOL_NAME, core.name])
    assert registry.get(SEARCH_TOOL_NAME) is not None and registry.get(SEARCH_TOOL_NAME).never_prune  # type: ignore[union-attr]
    assert [d["name"] for d in registry.declarations()] == sorted(declared)  # still sorted: stable


def test_defer_true_defers_below_the_threshold_and_none_disables() -> None:
    registry = ToolRegistry([*many(3), make_tool(DECLARATIONS[100], defer=True)])
    deferred = [d["name"] for d in registry.declarations() if d.get("defer_loading")]
    assert deferred == [DECLARATIONS[100]["name"]] and SEARCH_TOOL_NAME in registry
    assert not any("defer_loading" in d for d in ToolRegistry(many(40), defer_above=None).declarations())


def test_server_side_search_declares_the_api_tool_instead_of_ours() -> None:
    registry = ToolRegistry(many(40), tool_search="bm25")
    declared = registry.declarations()
    assert SEARCH_TOOL_NAME not in registry
    assert declared[-1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert server_search_tool("regex")["type"] == "tool_search_tool_regex_20251119"
    with pytest.raises(ValueError, match="tool_search must be"):
        server_search_tool("vector")
    with pytest.raises(ValueError, match="tool_search must be"):
        Agent(tools=many(3), tool_search="vector")  # type: ignore[arg-type]


def test_registry_search_is_public_and_covers_every_tool() -> None:
    registry = ToolRegistry(many(60))
    assert registry.search("list the slack channels", 3)[0] == "slack_list_channels"
    assert len(registry.search("slack", 10)) == 10


def test_the_search_tool_answers_with_tool_reference_blocks() -> None:
    registry = ToolRegistry(many(60))
    outcome = registry.run_one(
        ToolCall("t1", SEARCH_TOOL_NAME, {"query": "reply in a slack thread", "limit": 3})
    )
    blocks = reference_blocks(outcome)
    assert blocks is not None and len(blocks) == 3
    assert blocks[0] == {"type": "tool_reference", "tool_name": "slack_reply_in_thread"}
    deferred = {d["name"] for d in registry.declarations() if d.get("defer_loading")}
    assert {b["tool_name"] for b in blocks} <= deferred  # only tools the model cannot see yet


def test_a_search_outcome_read_back_from_a_session_still_loads_its_tools() -> None:
    from agent.session_format import as_text

    registry = ToolRegistry(many(60))
    outcome = registry.run_one(ToolCall("t1", SEARCH_TOOL_NAME, {"query": "reply in a slack thread"}))
    resumed = ToolOutcome(outcome.call, as_text(outcome.value), False, tool=outcome.tool)
    assert reference_blocks(resumed) == reference_blocks(outcome) is not None
    broken = ToolOutcome(outcome.call, "not json", False, tool=outcome.tool)
    assert reference_blocks(broken) is None


def test_a_search_that_finds_nothing_is_an_error_result_in_words() -> None:
    registry = ToolRegistry(many(60))
    outcome = registry.run_one(ToolCall("t1", SEARCH_TOOL_NAME, {"query": "qqqq zzzz"}))
    assert outcome.is_error and "no tool matches" in str(outcome.value)
    assert reference_blocks(outcome) is None


def test_another_tools_list_result_is_not_taken_for_references() -> None:
    lister = tool(name="names", description="Some names.")(lambda: ["a", "b"])
    registry = ToolRegistry([lister])
    assert reference_blocks(registry.run_one(ToolCall("t1", "names", {}))) is None
