"""Today's models, loop side: the model table, thinking options, cut-off retries, events,
and the thinking-history strategies (`agent.context.thinking`), on the scripted model."""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest

from agent import Agent, TokenBudgetExceeded, tool
from agent.context.compact import transcript
from agent.context.thinking import first_rewrite, strip_thinking_from, thinking_blocks
from agent.context.tokens import signature_key
from agent.events import Event
from agent.ext.sessions import Session, read_session
from agent.models import MODELS, ModelInfo, Price, refine_from_capabilities
from agent.testing import ScriptedLLM, reply, tool_use
from agent.usage import Usage


def thought(label: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": "", "signature": f"sig-{label}"}


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: what to look up.
    """
    return f"value of {key}: " + "x" * 600


def looping_script(turns: int) -> list[Any]:
    """`turns` tool turns, each starting with a thinking block, then a final answer."""
    script: list[Any] = [reply(thought(f"t{i}"), tool_use("lookup", {"key": f"k{i}"})) for i in range(turns)]
    return [*script, reply(thought("final"), "done")]


# -- the model table --------------------------------------------------------------------


def test_a_dated_id_maps_to_its_family_but_never_across_versions() -> None:
    assert MODELS.lookup("claude-haiku-4-5-20251001") is MODELS["claude-haiku-4-5"]
    assert MODELS.lookup("claude-opus-5-5") is not MODELS.lookup("claude-opus-5")
    assert MODELS.price("claude-opus-5-5") == Price(4.0, 5.0, 8.0, 0.20, 20.0)
    assert MODELS.lookup("claude-opus-5-5-beta") is None  # not a date: no neighbour by prefix


def test_an_unknown_model_warns_once_and_its_cost_is_none(caplog: pytest.LogCaptureFixture) -> None:
    table = MODELS.register()  # a fresh table, so the warning is not already spent
    with caplog.at_level(logging.WARNING, logger="agent"):
        Agent(llm=ScriptedLLM([reply("hi")], model="house-model"), model="house-model", models=table)
        result = Agent(
            llm=ScriptedLLM([reply("hi")], model="house-model"), model="house-model", models=table
        ).run("x")
    warnings = [r for r in caplog.records if "house-model" in r.getMessage()]
    assert len(warnings) == 1 and "cost" in warnings[0].getMessage()
    assert result.steps[0].cost_usd is None


def test_a_registered_model_is_priced_and_checked() -> None:
    mine = ModelInfo("house-model", 100_000, 8_000, 1024, Price.from_base(1.0, 2.0), efforts=("low",))
    table = MODELS.register(mine)
    assert "house-model" not in MODELS  # the default table is untouched
    result = Agent(llm=ScriptedLLM([reply("hi")]), model="house-model", models=table).run("x")
    assert result.steps[0].cost_usd is not None and result.steps[0].cost_usd > 0
    with pytest.raises(ValueError, match="does not take effort='high'"):
        Agent(llm=ScriptedLLM([]), model="house-model", models=table, effort="high")
    with pytest.raises(ValueError, match=r"max_tokens must be 1\.\.8,000"):
        Agent(llm=ScriptedLLM([]), model="house-model", models=table, max_tokens=9_000)


def sdk_model_names() -> list[str]:
    """Every model id the installed SDK's `Model` type names (its Literal members)."""
    from typing import Literal, get_args, get_origin

    from anthropic.types.model import Model

    def literals(kind: Any) -> list[str]:
        if get_origin(kind) is Literal:
            return [str(a) for a in get_args(kind)]
        return [name for arg in get_args(kind) for name in literals(arg)]

    return literals(Model)


# Models the table leaves out on purpose, with the reason: none today.
LEFT_OUT: dict[str, str] = {}

# Models in the table without a price, each with the reason (a guessed price is worse than none).
UNPRICED = {
    "claude-haiku-5-5": "priced in two bands by prompt length, which one Price cannot say",
    "claude-mythos-5-2": "the pricing page gives it no price (limited availability)",
    "claude-mythos-preview": "the pricing page gives it no price (invitation only; succeeded by Mythos 5)",
}


def test_every_model_the_sdk_names_is_in_the_table() -> None:
    names = sdk_model_names()
    assert len(names) >= 20 and "claude-fable-5" in names  # the Literal was read, not an empty Union
    missing = [n for n in names if MODELS.lookup(n) is None and n not in LEFT_OUT]
    assert missing == []
    unpriced = {n for n in names if MODELS.price(n) is None}
    assert unpriced == set(UNPRICED)


def test_fable_5_and_mythos_5_are_in_the_table() -> None:
    # https://platform.claude.com/docs/en/models/fable-5/overview: 1M context, 128K output,
    # $10 / $50; Mythos 5 "shares Claude Fable 5's specifications and pricing".
    # https://platform.claude.com/docs/en/about-claude/pricing: writes $12.50 / $20, reads $1.
    # https://platform.claude.com/docs/en/models/fable-5/migration-guide: `disabled` thinking and
    # a budget are a 400 (adaptive is the only mode). Cache minimum 512: the prompt caching page.
    for model in ("claude-fable-5", "claude-mythos-5"):
        info = MODELS[model]
        assert (info.context_window, info.max_output, info.min_cacheable) == (1_000_000, 128_000, 512)
        assert info.price == Price(10.0, 12.5, 20.0, 1.0, 50.0)
        assert info.adaptive_only and info.thinks_by_default and not info.preserved_thinking
        with pytest.raises(ValueError, match="does not accept thinking type 'disabled'"):
            Agent(llm=ScriptedLLM([]), model=model, thinking={"type": "disabled"})


def test_the_fable_and_mythos_5_1_and_fable_5_2_prices_are_the_pricing_pages() -> None:
    # https://platform.claude.com/docs/en/about-claude/pricing: Fable 5.1 and Mythos 5.1 (limited
    # availability) $10 input, $12.50 / $20 writes, $0.25 reads (0.025x, not 0.1x), $50 output.
    assert MODELS.price("claude-fable-5-1") == Price(10.0, 12.5, 20.0, 0.25, 50.0)
    assert MODELS.price("claude-mythos-5-1") == MODELS.price("claude-fable-5-1")
    # Fable 5.2 (released 2026-11-09), the same page's row as read on release by
    # https://docs.laozhang.ai/en/announcements/claude-fable-5-2-2026-11.md (list price $8 / $40,
    # reads $0.20, 5m write $10) and https://github.com/archid21/rightsize/releases/tag/v0.10.2
    # ($10 / $16 writes); the stored copy of the pricing page predates it.
    assert MODELS.price("claude-fable-5-2") == Price(8.0, 10.0, 16.0, 0.20, 40.0)


def test_opus_4_7_and_4_8_take_no_thinking_budget() -> None:
    # https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking and the Opus 4.7
    # model card (https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-opus-4-7.md):
    # "only supports thinking.type: adaptive ... enabled with budget_tokens is not supported and
    # will return a 400 error". https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-8:
    # Opus 4.8 "builds on Claude Opus 4.7" and supports adaptive thinking.
    for model in ("claude-opus-4-7", "claude-opus-4-8"):
        with pytest.raises(ValueError, match="does not accept thinking type 'enabled'"):
            Agent(llm=ScriptedLLM([]), model=model, thinking={"type": "enabled", "budget_tokens": 2048})
        Agent(llm=ScriptedLLM([]), model=model, thinking={"type": "adaptive"})
        assert not MODELS[model].thinks_by_default  # thinking is off when `thinking` is absent


def test_mythos_preview_is_in_the_table_unpriced() -> None:
    # https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking.md:
    # Mythos Preview "only" supports adaptive thinking (`enabled` and `disabled` are a 400).
    info = MODELS["claude-mythos-preview"]
    assert info.adaptive_only and info.price is None and info.min_cacheable == 2048


def test_effort_and_thinking_are_checked_per_model_at_construction() -> None:
    with pytest.raises(ValueError, match="claude-haiku-4-5 does not take effort"):
        Agent(llm=ScriptedLLM([]), model="claude-haiku-4-5", effort="low")
    with pytest.raises(ValueError, match="does not take effort='xhigh'"):
        Agent(llm=ScriptedLLM([]), model="claude-sonnet-4-6", effort="xhigh")
    with pytest.raises(ValueError, match="does not accept thinking type 'disabled'"):
        Agent(llm=ScriptedLLM([]), model="claude-opus-5-5", thinking={"type": "disabled"})
    with pytest.raises(ValueError, match="display"):
        Agent(llm=ScriptedLLM([]), thinking={"type": "adaptive", "display": "loud"})
    Agent(llm=ScriptedLLM([]), model="claude-opus-5", thinking={"type": "disabled"}, effort="max")


def test_capabilities_from_the_api_refine_the_table() -> None:
    class Flag:
        def __init__(self, on: bool) -> None:
            self.supported = on

    class Caps:
        effort = type(
            "E",
            (),
            {
                "supported": True,
                "low": Flag(True),
                "medium": Flag(False),
                "high": Flag(True),
                "max": Flag(False),
                "xhigh": None,
            },
        )()
        thinking = type(
            "T",
            (),
            {
                "types": type(
                    "K",
                    (),
                    {
                        "adaptive": Flag(True),
                        "enabled": Flag(False),
                        "disabled": Flag(True),
                        "between_tools": Flag(False),
                    },
                )()
            },
        )()

    refined = refine_from_capabilities(MODELS, "claude-opus-5", Caps())
    assert refined["claude-opus-5"].efforts == ("low", "high")
    assert refined["claude-opus-5"].thinking_types == ("adaptive", "disabled")
    assert refine_from_capabilities(MODELS, "house-model", Caps()) is MODELS


def test_max_tokens_defaults_to_room_for_thinking_and_may_pass_the_old_cap() -> None:
    llm = ScriptedLLM([reply("hi"), reply("hi")])
    Agent(llm=llm).run("x")
    assert llm.requests[0]["max_tokens"] == 32_000
    Agent(llm=llm, max_tokens=64_000).run("x")
    assert llm.requests[1]["max_tokens"] == 64_000


def test_cost_uses_each_models_own_prices() -> None:
    llm = ScriptedLLM([reply("hi", input_tokens=1_000_000, output_tokens=1_000_000)], model="claude-opus-5-5")
    result = Agent(llm=llm, model="claude-opus-5-5").run("x")
    assert result.usage.cost_usd == pytest.approx(4.0 + 20.0)


# -- thinking in the loop ---------------------------------------------------------------


def test_thinking_blocks_go_back_unchanged_and_in_order() -> None:
    llm = ScriptedLLM(looping_script(2))
    Agent(llm=llm, tools=[lookup], artifacts_dir=None).run("go")
    last = llm.requests[-1]["messages"]
    sent = [b for m in last if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"]
    assert sent == [thought("t0"), thought("t1")]
    assert last[1]["content"][0] == thought("t0")  # first in its turn, as the model wrote it


def test_the_thinking_option_goes_out_as_given() -> None:
    llm = ScriptedLLM([reply("hi"), reply("hi")])
    Agent(llm=llm, thinking={"type": "adaptive", "display": "summarized"}).run("x")
    Agent(llm=llm).run("x")
    assert llm.requests[0]["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert "thinking" not in llm.requests[1]  # None: the model's own default


def test_a_reply_cut_off_while_thinking_is_retried_once_with_more_room() -> None:
    cut = reply(thought("long"), stop_reason="max_tokens")
    llm = ScriptedLLM([cut, reply(thought("ok"), "the answer")])
    seen: list[Event] = []
    result = Agent(llm=llm, max_tokens=1000, on_event=seen.append).run("x")
    assert result.text == "the answer" and result.stop_reason == "end_turn"
    assert [r["max_tokens"] for r in llm.requests] == [1000, 2000]
    assert len(result.steps) == 2 and {u.step for u in result.steps} == {1}  # both billed, one step
    assert [e.kind for e in seen if e.kind == "retry"] == ["retry"]


def test_a_retry_never_goes_past_the_models_output_limit_and_text_cut_off_is_not_retried() -> None:
    at_limit = ScriptedLLM([reply(thought("x"), stop_reason="max_tokens")])
    result = Agent(llm=at_limit, model="claude-haiku-4-5", max_tokens=64_000).run("x")
    assert len(at_limit.requests) == 1 and result.stop_reason == "max_tokens"
    said = ScriptedLLM([reply("a long answer that got cu", stop_reason="max_tokens")])
    assert Agent(llm=said).run("x").stop_reason == "max_tokens" and len(said.requests) == 1


def test_events_report_steps_and_tools_in_order() -> None:
    seen: list[Event] = []
    Agent(llm=ScriptedLLM(looping_script(1)), tools=[lookup], artifacts_dir=None, on_event=seen.append).run(
        "go"
    )
    kinds = [(e.kind, e.step, e.tool) for e in seen]
    assert kinds == [
        ("step_start", 1, None),
        ("step_end", 1, None),
        ("tool_call", 1, "lookup"),
        ("tool_result", 1, "lookup"),
        ("step_start", 2, None),
        ("step_end", 2, None),
    ]


def test_a_broken_event_callback_never_breaks_the_run(caplog: pytest.LogCaptureFixture) -> None:
    def explode(event: Event) -> None:
        raise RuntimeError("display broke")

    result = Agent(llm=ScriptedLLM([reply("fine")]), on_event=explode).run("x")
    assert result.text == "fine" and "display broke" in caplog.text


# -- thinking under a rewritten history --------------------------------------------------


def test_first_rewrite_and_strip_are_pure_and_exact() -> None:
    a = {"role": "user", "content": [{"type": "text", "text": "q"}]}
    b = {"role": "assistant", "content": [thought("1"), {"type": "text", "text": "a"}]}
    c = {"role": "user", "content": [{"type": "text", "text": "more"}]}
    d = {"role": "assistant", "content": [thought("2")]}
    assert first_rewrite([a, b], [a, b, c]) is None
    assert first_rewrite([a, b, c], [a, {**b, "content": [thought("1")]}, c]) == 1
    history = [a, b, c, d]
    stripped = strip_thinking_from(history, 2)
    assert stripped == [a, b, c]  # the thinking-only turn goes; the earlier block stays
    assert history == [a, b, c, d] and thinking_blocks(history) == 2  # input untouched


def run_long(model: str, **options: Any) -> tuple[ScriptedLLM, Any]:
    llm = ScriptedLLM(looping_script(9), model=model)
    agent = Agent(
        llm=llm, model=model, tools=[lookup], keep_recent=2, prune_batch=2, artifacts_dir=None, **options
    )
    return llm, agent.run("go")


def rewrites(requests: list[dict[str, Any]]) -> list[int | None]:
    """For each pair of consecutive requests, where the second first rewrote the history."""
    return [first_rewrite(a["messages"], b["messages"]) for a, b in itertools.pairwise(requests)]


def assert_no_thinking_after_a_rewrite(requests: list[dict[str, Any]]) -> None:
    """The legality rule: in each request, no thinking block sits at or after the first message
    that differs from what the previous request sent."""
    for current, start in zip(requests[1:], rewrites(requests), strict=True):
        if start is not None:
            assert thinking_blocks(current["messages"][start:]) == 0, f"thinking after rewrite at {start}"


def strip_markers(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from agent.context.cache import strip_cache_control

    return [strip_cache_control(r) for r in requests]


def test_strip_removes_every_thinking_block_after_a_pruning_rewrite() -> None:
    llm, result = run_long("claude-opus-5-5", thinking_history="strip")
    requests = strip_markers(llm.requests)
    assert_no_thinking_after_a_rewrite(requests)
    assert any(start is not None for start in rewrites(requests))
    assert result.stop_reason == "end_turn"


def test_append_only_never_rewrites_between_compactions() -> None:
    llm, _ = run_long("claude-opus-5-5")  # the default for a model with preserved thinking
    requests = strip_markers(llm.requests)
    assert rewrites(requests) == [None] * (len(requests) - 1)
    assert thinking_blocks(requests[-1]["messages"]) == 9  # every block still reaches the model


def test_keep_prunes_as_before_on_models_without_preserved_thinking() -> None:
    llm, _ = run_long("claude-opus-5")
    requests = strip_markers(llm.requests)
    assert any(start is not None for start in rewrites(requests))
    assert thinking_blocks(requests[-1]["messages"]) == 9  # content-bound only: pruning is harmless


def test_drop_block_asks_the_api_to_drop_and_sends_its_beta() -> None:
    llm, _ = run_long("claude-opus-5-5", thinking_history="drop_block")
    assert llm.requests[0]["thinking"] == {
        "type": "adaptive",
        "block_binding": {"prefix_mismatch_behavior": "drop_block"},
    }
    assert llm.requests[0]["betas"] == ["thinking-binding-controls-2026-08-01"]
    with pytest.raises(ValueError, match="drop_block"):
        Agent(llm=ScriptedLLM([]), model="claude-opus-5", thinking_history="drop_block")


def test_compaction_transcripts_leave_thinking_out() -> None:
    head = [
        {"role": "user", "content": [{"type": "text", "text": "task"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "secret plan", "signature": "s"},
                {"type": "text", "text": "visible"},
            ],
        },
    ]
    text = transcript(head)
    assert "secret plan" not in text and "visible" in text


def test_a_summary_cut_off_by_max_tokens_is_never_used() -> None:
    steps = ScriptedLLM([*(reply(tool_use("lookup", {"key": f"k{i}"})) for i in range(6)), reply("done")])
    summaries = ScriptedLLM(
        [reply("1. Request: look things up. 2. Facts: k0 is", stop_reason="max_tokens")] * 9
    )

    class Router:  # the loop's calls go to `steps`, the summarizer's (tool-less) to `summaries`
        def create(self, request: Any) -> Any:
            return (steps if "tools" in request else summaries).create(request)

    agent = Agent(
        llm=Router(),
        model="claude-opus-5",
        tools=[lookup],
        max_context_tokens=900,
        artifacts_dir=None,
        keep_recent=3,
    )
    result = agent.run("look up six keys")
    assert summaries.requests, "the test must reach a compaction"
    assert all(r["thinking"] == {"type": "disabled"} for r in summaries.requests)  # no reasoning budget
    assert all("Facts: k0 is" not in str(r["messages"]) for r in steps.requests), "a cut-off summary was used"
    assert result.stop_reason == "end_turn" and any(u.purpose == "summary" for u in result.steps)


def test_usage_records_thinking_models_cost_at_their_own_price() -> None:
    msg = ScriptedLLM([reply("x", input_tokens=100, output_tokens=50)], model="claude-opus-5-5").create(
        {"model": "claude-opus-5-5", "messages": []}
    )
    usage = Usage.from_message(1, msg, model="claude-opus-5-5")
    assert usage.cost_usd == pytest.approx((100 * 4 + 50 * 20) / 1e6)


def test_the_hidden_length_of_thinking_counts_in_every_estimate(tmp_path: Any) -> None:
    long_thought = reply(thought("deep"), tool_use("lookup", {"key": "k"}))
    long_thought["usage"] = {"output_tokens": 5_100, "output_tokens_details": {"thinking_tokens": 5_000}}
    agent = Agent(
        llm=ScriptedLLM([long_thought, reply("done")]),
        tools=[lookup],
        artifacts_dir=None,
        max_input_tokens=3_000,
    )  # room for two small requests, not for 5,000 hidden tokens
    with pytest.raises(TokenBudgetExceeded):
        agent.run("go", extensions=[Session(tmp_path / "run.jsonl")])
    saved = read_session(tmp_path / "run.jsonl")
    assert saved.calibration["hidden"] == {signature_key("sig-deep"): 5_000}  # a resume knows it too


def test_anthropic_llm_refines_the_table_from_the_apis_capabilities(simulator: Any) -> None:
    sim = simulator()
    refined = sim.llm().refine(MODELS.register(ModelInfo("claude-opus-5", 1, 1, 1, None)), "claude-opus-5")
    assert refined["claude-opus-5"].efforts == MODELS["claude-opus-5"].efforts  # what the API reported
    assert refined["claude-opus-5"].thinking_types == ("adaptive", "disabled")
    assert sim.llm().refine(MODELS, "house-model") is MODELS  # unknown to the API: unchanged


def test_dropped_thinking_blocks_are_counted_from_the_response_however_it_carries_them() -> None:
    from types import SimpleNamespace

    llm = ScriptedLLM([reply("x")], model="claude-opus-5-5")
    msg = llm.create({"model": "claude-opus-5-5", "messages": []})
    dropped = [
        {"type": "thinking_dropped", "location": "messages.1.content.0", "reason": "prefix_binding_mismatch"},
        {"type": "thinking_dropped", "location": "messages.3.content.0", "reason": "prefix_binding_mismatch"},
        {"type": "something_else"},
    ]
    as_sent = msg.model_validate({**msg.model_dump(), "input_transformations": dropped})  # an SDK extra
    assert Usage.from_message(1, as_sent).thinking_dropped == 2
    assert Usage.from_message(1, msg).thinking_dropped == 0
    plain = SimpleNamespace(**{**vars(msg), "input_transformations": dropped})  # not a pydantic model
    assert Usage.from_message(1, plain).thinking_dropped == 2  # type: ignore[arg-type]
