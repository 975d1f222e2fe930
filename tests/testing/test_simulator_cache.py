"""Each prompt-cache rule of the simulator, through the SDK, with a test that fails when it breaks.

Sizes are the simulator's deterministic estimate (ceil(chars / 4) per block), read
back through `count_tokens` or `cache_model.render`, never hard-coded.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.testing.cache_model import MIN_CACHEABLE_TOKENS, Position, PromptCache, render
from agent.testing.simulator import MessagesSimulator

MARK = {"type": "ephemeral"}
RULES = "Rule: answer in the house style, cite the ledger, keep totals exact. " * 40  # ~700 tokens
TOOLS = [
    {
        "name": f"tool_{i}",
        "description": "Looks things up in the ledger and returns them as JSON. " * 12,
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    for i in range(3)
]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def marked(block: dict[str, Any], ttl: str | None = None) -> dict[str, Any]:
    return {**block, "cache_control": {**MARK, "ttl": ttl} if ttl else MARK}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def request(
    *,
    system: str = RULES,
    system_mark: bool = True,
    tools: list[dict[str, Any]] | None = None,
    tools_mark: bool = False,
    blocks: list[dict[str, Any]] | None = None,
    model: str = "claude-opus-5",
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": 64, **extra}
    if tools is not None:
        body["tools"] = [*tools[:-1], marked(tools[-1])] if tools_mark else tools
    body["system"] = [marked(text(system)) if system_mark else text(system)]
    body["messages"] = [{"role": "user", "content": blocks or [text("What is the balance?")]}]
    return body


def usage(sim: MessagesSimulator, body: dict[str, Any]) -> anthropic.types.Usage:
    result = sim.client().messages.create(**body).usage
    whole = sum(p.tokens for p in render(body))
    assert result.input_tokens + result.cache_read_input_tokens + result.cache_creation_input_tokens == whole
    return result


def upto(body: dict[str, Any], level: str) -> int:
    """Tokens of the prompt up to the end of `level` (tools, system)."""
    order = ["tools", "system", "messages"]
    return sum(p.tokens for p in render(body) if order.index(p.level) <= order.index(level))


def read_write(u: Any) -> tuple[int, int]:
    return u.cache_read_input_tokens, u.cache_creation_input_tokens


def test_repeat_hits_what_the_first_request_wrote(simulator: Any) -> None:
    sim, body = simulator(), request()
    first, second = usage(sim, body), usage(sim, body)
    assert read_write(first) == (0, upto(body, "system"))
    assert read_write(second) == (upto(body, "system"), 0)
    assert first.cache_creation.ephemeral_5m_input_tokens == upto(body, "system")


def test_no_breakpoint_no_cache(simulator: Any) -> None:
    sim, body = simulator(), request(system_mark=False)
    assert read_write(usage(sim, body)) == read_write(usage(sim, body)) == (0, 0)


def test_one_changed_byte_of_system_is_a_miss(simulator: Any) -> None:
    sim = simulator()
    usage(sim, request())
    changed = request(system=RULES[:-2] + "!" + RULES[-1])
    assert read_write(usage(sim, changed)) == (0, upto(changed, "system"))


def test_system_change_keeps_the_tools_cached(simulator: Any) -> None:
    sim = simulator()
    usage(sim, request(tools=TOOLS, tools_mark=True))
    changed = request(system=RULES + "New rule.", tools=TOOLS, tools_mark=True)
    got = usage(sim, changed)
    assert read_write(got) == (upto(changed, "tools"), upto(changed, "system") - upto(changed, "tools"))


def test_tool_change_invalidates_everything(simulator: Any) -> None:
    sim = simulator()
    usage(sim, request(tools=TOOLS, tools_mark=True))
    other = [*TOOLS[:-1], {**TOOLS[-1], "description": TOOLS[-1]["description"] + "Also dates."}]
    assert usage(sim, request(tools=other, tools_mark=True)).cache_read_input_tokens == 0


def test_tool_key_order_is_part_of_the_bytes(simulator: Any) -> None:
    sim = simulator()
    usage(sim, request(tools=TOOLS, tools_mark=True))
    reordered = [dict(reversed(list(t.items()))) for t in TOOLS]
    assert usage(sim, request(tools=reordered, tools_mark=True)).cache_read_input_tokens == 0


def conversation(**extra: Any) -> dict[str, Any]:
    blocks = [text(f"Note {i}: " + "ledger line " * 30) for i in range(6)]
    return request(tools=TOOLS, tools_mark=True, blocks=[*blocks[:-1], marked(blocks[-1])], **extra)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"output_config": {"effort": "high"}}, {"output_config": {"effort": "low"}}),
        ({}, {"output_config": {"effort": "low"}}),
        ({"tool_choice": {"type": "auto"}}, {"tool_choice": {"type": "any"}}),
        ({}, {"thinking": {"type": "adaptive", "display": "summarized"}}),
    ],
)
def test_effort_tool_choice_thinking_invalidate_only_the_messages(
    simulator: Any, before: dict[str, Any], after: dict[str, Any]
) -> None:
    sim = simulator()
    usage(sim, conversation(**before))
    changed = conversation(**after)
    whole = sum(p.tokens for p in render(changed))
    assert read_write(usage(sim, changed)) == (upto(changed, "system"), whole - upto(changed, "system"))
    assert usage(sim, changed).cache_read_input_tokens == whole


def test_model_change_is_a_miss(simulator: Any) -> None:
    sim = simulator()
    usage(sim, conversation())
    assert usage(sim, conversation(model="claude-sonnet-5")).cache_read_input_tokens == 0


def many_blocks(mark_at: int, count: int = 40) -> dict[str, Any]:
    blocks = [text(f"Line {i}: " + "entry " * 20) for i in range(count)]
    blocks[mark_at] = marked(blocks[mark_at])
    return request(system_mark=False, blocks=blocks)


def prefix_tokens(body: dict[str, Any], position: int) -> int:
    return list(accumulate(p.tokens for p in render(body)))[position]


@pytest.mark.parametrize(("moved", "hits"), [(0, True), (19, True), (20, False), (25, False)])
def test_lookback_reaches_20_block_positions(simulator: Any, moved: int, hits: bool) -> None:
    sim = simulator()
    usage(sim, many_blocks(10))  # position 11: one system block, then the messages
    later = many_blocks(10 + moved)
    expected = prefix_tokens(later, 11) if hits else 0
    assert usage(sim, later).cache_read_input_tokens == expected


def test_hits_only_prefixes_written_at_breakpoints(simulator: Any) -> None:
    sim = simulator()
    usage(sim, many_blocks(10))
    at_15 = many_blocks(15)
    assert read_write(usage(sim, at_15)) == (
        prefix_tokens(at_15, 11),
        prefix_tokens(at_15, 16) - prefix_tokens(at_15, 11),
    )
    assert usage(sim, at_15).cache_read_input_tokens == prefix_tokens(at_15, 16)


def test_top_level_cache_control_marks_the_last_block(simulator: Any) -> None:
    sim, body = simulator(), request(system_mark=False, cache_control=MARK)
    whole = sum(p.tokens for p in render(body))
    assert read_write(usage(sim, body)) == (0, whole)
    assert read_write(usage(sim, body)) == (whole, 0)


def test_five_breakpoints_are_a_400(simulator: Any) -> None:
    blocks = [marked(text(f"part {i}")) for i in range(4)]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks with cache_control"):
        usage(simulator(), request(blocks=blocks))
    with pytest.raises(anthropic.BadRequestError, match="Found 5"):
        usage(simulator(), request(blocks=blocks[:3], cache_control=MARK))


@pytest.mark.parametrize(("model", "minimum"), sorted(MIN_CACHEABLE_TOKENS.items()))
def test_below_the_model_minimum_nothing_is_cached(simulator: Any, model: str, minimum: int) -> None:
    sim = simulator()
    small, big = "word " * (minimum * 4 // 5 - 40), "word " * (minimum * 4 // 5 + 40)
    below, above = request(system=small, model=model), request(system=big, model=model)
    assert upto(below, "system") < minimum <= upto(above, "system")
    assert read_write(usage(sim, below)) == read_write(usage(sim, below)) == (0, 0)
    assert read_write(usage(sim, above)) == (0, upto(above, "system"))


def test_minimums_are_the_documented_ones() -> None:
    documented = {
        "claude-opus-5": 512,
        "claude-sonnet-5": 1024,
        "claude-sonnet-4-6": 1024,
        "claude-sonnet-4-5": 1024,
        "claude-opus-4-8": 1024,
        "claude-opus-4-7": 2048,
        "claude-opus-4-6": 4096,
        "claude-opus-4-5": 4096,
        "claude-haiku-4-5": 4096,
    }
    assert {model: MIN_CACHEABLE_TOKENS.get(model) for model in documented} == documented


def test_minimum_boundary_is_exact() -> None:
    def positions(tokens: int) -> list[Position]:
        return [Position("system", "x", tokens, "digest", "5m")]

    assert PromptCache().account_positions(positions(511), 512).cache_creation_input_tokens == 0
    assert PromptCache().account_positions(positions(512), 512).cache_creation_input_tokens == 512


def test_ttl_expires_after_five_minutes_and_a_hit_refreshes_it(simulator: Any) -> None:
    clock = Clock()
    sim, body = simulator(clock=clock), request()
    cached = upto(body, "system")
    usage(sim, body)
    clock.now += 299
    assert usage(sim, body).cache_read_input_tokens == cached
    clock.now += 299  # 598 s after the write: alive only because the hit refreshed it
    assert usage(sim, body).cache_read_input_tokens == cached
    clock.now += 301
    assert read_write(usage(sim, body)) == (0, cached)


def test_a_hit_found_by_lookback_refreshes_that_entry(simulator: Any) -> None:
    clock = Clock()
    sim = simulator(clock=clock)
    usage(sim, many_blocks(10))
    clock.now += 299
    usage(sim, many_blocks(15))  # reads the entry at block 10 by lookback, writes one at 15
    clock.now += 299
    assert usage(sim, many_blocks(10)).cache_read_input_tokens == prefix_tokens(many_blocks(10), 11)


def test_one_hour_ttl(simulator: Any) -> None:
    clock = Clock()
    sim = simulator(clock=clock)
    body = request()
    body["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    first = usage(sim, body)
    assert first.cache_creation.ephemeral_1h_input_tokens == upto(body, "system")
    assert first.cache_creation.ephemeral_5m_input_tokens == 0
    clock.now += 3000
    assert usage(sim, body).cache_read_input_tokens == upto(body, "system")
    clock.now += 3601
    assert usage(sim, body).cache_read_input_tokens == 0


def test_writes_split_by_ttl(simulator: Any) -> None:
    body = request(tools=TOOLS, system_mark=True)
    body["tools"][-1] = marked(body["tools"][-1], "1h")
    u = usage(simulator(), body)
    assert u.cache_creation.ephemeral_1h_input_tokens == upto(body, "tools")
    assert u.cache_creation.ephemeral_5m_input_tokens == upto(body, "system") - upto(body, "tools")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(1, 400), min_size=1, max_size=30),
            st.sets(st.integers(0, 29), max_size=4),
            st.integers(0, 400),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([0, 512, 4096]),
)
def test_uncached_read_write_always_sum_to_the_prompt(steps: list[Any], minimum: int) -> None:
    cache = PromptCache(clock=Clock())
    for tokens, marks, advance in steps:
        positions = [
            Position("messages", str(i), t, f"{i}:{t}", "5m" if i in marks else None)
            for i, t in enumerate(tokens)
        ]
        cache.clock.now += advance  # type: ignore[attr-defined]
        got = cache.account_positions(positions, minimum)
        assert min(got.input_tokens, got.cache_read_input_tokens, got.cache_creation_input_tokens) >= 0
        assert got.prompt == sum(tokens)
        assert (
            got.cache_creation_input_tokens == got.ephemeral_5m_input_tokens + got.ephemeral_1h_input_tokens
        )
