"""The agent loop: call the model, run the tools it asks for, repeat until done.

`Agent.run(prompt)` (or `await Agent.arun(prompt)`) is the whole story, and each step
of it is a method a subclass may override (async: a coroutine, awaited; a plain method
overriding one works too):

    prepare_context  shrink the history (prune old results, compact the head: run off the
                     event loop when compaction is on, its summary call is a sync `create`)
    build_request    the Messages API body (tools, system, effort, cache breakpoints)
    check_budgets    refuse a call that would break a token or dollar budget
    call_model       async: the one call through the `LLM` seam, its usage recorded
    retry_with_room  async: once, a reply cut off by max_tokens before it said anything usable
    run_tools        async: approve, validate, run in parallel, results back in call order
    render_result    turn one tool's raw return value into the text the model reads

There is one loop, a coroutine: `arun` awaits it, `run` drives it on a private event
loop (`agent.steps`), so sync and async runs cannot drift apart.

The policies live in their own modules (`agent/context/`, `agent/budget.py`,
`agent/approval.py`, `agent/session.py`); this file only orchestrates. The history
is a list of wire-shaped dicts that is never mutated: each step builds a new list,
so the caller's lists and any earlier snapshot stay as they were.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from anthropic.types import Message
from typing_extensions import Unpack

from agent import retry
from agent.accounting import book_answer, book_failed_attempt
from agent.approval import arun_guarded
from agent.budget import check_budgets
from agent.config import AgentConfig, AgentOptions, check_effort
from agent.context.built_once import built_once
from agent.context.cache import mark_breakpoints
from agent.context.diet import register_read_artifact, render_outcome
from agent.context.history import shrink_history
from agent.context.summarize import SummaryCache
from agent.context.thinking import thinking_param
from agent.context.tokens import Calibration
from agent.errors import ModelCallFailed, StepBudgetExceeded
from agent.events import Event, emit
from agent.llm import LLM, AnthropicLLM
from agent.mcp.connector import add_connector
from agent.messages import (
    Msg,
    assistant_message,
    cut_off_early,
    final_text,
    opening_messages,
    stop_detail,
    text_of,
    tool_calls,
    tool_result_block,
)
from agent.registry import ToolCall, ToolOutcome, ToolRegistry
from agent.replay import pending_turn
from agent.request_log import append_request
from agent.server_tools import container_of
from agent.session import Session
from agent.setup_checks import check_tools
from agent.state import RunResult, RunState
from agent.steps import ask, blocking, recorded, run_sync, settle
from agent.tool_search.deferral import reference_blocks
from agent.tool_warnings import warn_outcomes
from agent.usage import RunUsage

__all__ = ["Agent", "RunResult", "RunState"]

log = logging.getLogger("agent")

DEFAULT_RETRIES = 2


class Agent(AgentConfig):
    """A model, a system prompt and tools, run in a loop under budgets."""

    def __init__(self, **options: Unpack[AgentOptions]) -> None:
        super().__init__(**options)
        for model in {self.model, self.summarizer_model or self.model, self.summarize_with or self.model}:
            if self.max_cost_usd is not None and self.models.price(model) is None:
                raise ValueError(
                    f"max_cost_usd needs a price for {model!r}: pass models=MODELS.with_price({model!r}, ...)"
                )
        if self.usage_log:
            Path(self.usage_log).parent.mkdir(parents=True, exist_ok=True)
        self.registry = ToolRegistry(
            self.tools,
            default_timeout=self.tool_timeout,
            defer_above=self.defer_tools_above,
            tool_search=self.tool_search,
        )
        register_read_artifact(self.registry, self.artifacts_dir, self.diet)
        check_tools(self.registry, self.keep_fields)
        llm = self.llm or AnthropicLLM()
        if self.model_retries is None:
            self.model_retries = int(getattr(llm, "max_retries", DEFAULT_RETRIES))
        if isinstance(llm, AnthropicLLM):
            llm = llm.without_retries()  # the loop retries, so the budgets see every attempt
        self.llm: LLM = llm  # an `AsyncLLM` too, possibly (`agent.steps.ask`)
        self.summaries = SummaryCache()  # `summarize_with`'s summaries, by content: each paid for once

    # -- running ---------------------------------------------------------------------

    def run(
        self, prompt: str, *, history: Sequence[Msg] = (), session: str | Path | None = None
    ) -> RunResult:
        """Answer `prompt` (after `history`, if any), calling tools until the model is done.

        With `session=path` every turn, approval and tool result is appended to that JSONL
        file as it happens, so `resume(path)` can continue the run after a crash. This is
        `arun` driven on a private event loop (`agent.steps.run_sync`).
        """
        return run_sync(lambda: self.arun(prompt, history=history, session=session))

    async def arun(
        self, prompt: str, *, history: Sequence[Msg] = (), session: str | Path | None = None
    ) -> RunResult:
        """`run`, awaited: many runs can share one event loop. Cancelling the task stops the
        run between or inside its steps; the session records `stopped`, and `aresume` goes on
        from there (an irreversible call cut off mid-way is reported as of unknown outcome)."""
        messages = opening_messages(history, prompt, tools_declared=len(self.registry) > 0)
        state = RunState(messages=messages, prompt=prompt)
        if session is not None:
            state.session = Session.create(
                session, run_id=state.run_id, model=self.model, messages=state.messages
            )
        return await self.drive(self.loop, state)

    def resume(self, path: str | Path) -> RunResult:
        """Continue the run recorded in session file `path` (build the agent as for `run`).

        Finished tools are not run again; an irreversible call that started but has no
        recorded result is reported to the model as of unknown outcome, never repeated.
        Budgets count the whole run, before and after the resume.
        """
        return run_sync(lambda: self.aresume(path))

    async def aresume(self, path: str | Path) -> RunResult:
        """`resume`, awaited."""
        session, saved = Session.reopen(path)
        step = max((u.step for u in saved.usage if u.purpose == "step"), default=0)  # the last answered
        state = RunState(saved.messages, RunUsage(saved.usage), Calibration(**saved.calibration), step)
        state.run_id, state.session, state.prompt = saved.run_id, session, saved.prompt
        if saved.stop_reason is not None:  # it had finished: nothing to do
            session.close()
            return state.result(final_text(state.messages), saved.stop_reason)

        async def finish_turn_then_loop(state: RunState) -> RunResult:
            if saved.pending:  # it died mid-turn: complete that turn before the next model call
                outcomes = await settle(self.run_tools(saved.pending, state))
                turn = saved.pending_reply or pending_turn(saved.pending)
                self.append(state, turn, await self.rendered(outcomes, state))
            return await self.loop(state)

        return await self.drive(finish_turn_then_loop, state)

    async def drive(
        self, loop: Callable[[RunState], Coroutine[Any, Any, RunResult]], state: RunState
    ) -> RunResult:
        """Await `loop` under the session's record, and release the run's artifact folder after
        (its lock keeps other runs' cleanup away from it only while the run is live)."""
        try:
            return await recorded(state.session, state, loop(state))
        finally:
            if state.artifacts is not None:
                state.artifacts.close()

    async def loop(self, state: RunState) -> RunResult:
        """Step until the model gives a final answer or a budget stops the run."""
        while True:
            if state.step >= self.max_steps:
                raise StepBudgetExceeded(
                    f"max_steps={self.max_steps} reached with the task unfinished",
                    state.result(final_text(state.messages), "max_steps"),
                )
            state.step += 1
            emit(self.on_event, Event("step_start", state.step))
            shrink = self.prepare_context  # may call the model to compact: off the loop then
            state.messages = await blocking(shrink, state) if self.max_context_tokens else shrink(state)
            request = self.build_request(state)
            self.check_budgets(request, state)
            response = await settle(self.call_model(request, state))
            if cut_off_early(response):
                response = await settle(self.retry_with_room(request, response, state))
            state.container = container_of(response) or state.container
            emit(self.on_event, Event("step_end", state.step, response.stop_reason or ""))

            calls = tool_calls(response)
            if response.stop_reason == "tool_use" and calls:
                turn = assistant_message(response)
                state.session.record_reply(state, turn)
                outcomes = await settle(self.run_tools(calls, state))
                self.append(state, turn, await self.rendered(outcomes, state))
            elif response.stop_reason == "pause_turn":
                self.append(state, assistant_message(response))  # sent back as-is to continue
            else:  # a final answer, or a turn cut off (max_tokens, refusal): no tool call runs now,
                # and none is kept unanswered, so `result.messages` stays valid to continue from
                self.append(state, assistant_message(response, drop_tool_uses=True, after=state.messages))
                stop = response.stop_reason or "end_turn"
                return state.result(text_of(response), stop, stop_detail(stop))

    # -- the overridable steps -----------------------------------------------------------

    def prepare_context(self, state: RunState) -> list[Msg]:
        """The history to send this step, as a new list: old tool results pruned to stubs,
        the head folded into a summary once the request nears `max_context_tokens`, and the
        memory's keys noted in the newest turn (`agent.context.history`)."""
        return shrink_history(self, state)

    def choose_effort(self, state: RunState) -> str | None:
        """Effort for this step; override to think harder on some steps (the cached
        messages are invalidated whenever the effort changes)."""
        return self.effort

    def build_request(self, state: RunState) -> dict[str, Any]:
        """The request body, rendered in the API's cache order: tools, system, messages."""
        effort = self.choose_effort(state)
        check_effort(effort, self.models.lookup(self.model))
        thinking, betas = thinking_param(self.thinking, self.history_strategy())
        request: dict[str, Any] = {"model": self.model, "max_tokens": self.output_budget()}
        if self.system:
            request["system"] = [{"type": "text", "text": self.system}]
        if len(self.registry):
            request["tools"] = self.registry.declarations()
        request["messages"] = state.messages
        if thinking is not None:
            request["thinking"] = thinking
        if effort is not None:
            request["output_config"] = {"effort": effort}
        betas = [*betas, *(b for b in self.registry.betas() if b not in betas)]
        if betas:
            request["betas"] = betas  # sent as the anthropic-beta header, not in the body
        if state.container is not None:
            request["container"] = state.container  # code execution goes on in the same sandbox
        if self.mcp_servers:
            request = add_connector(request, self.mcp_servers)
        finish = (lambda body: mark_breakpoints(body, self.cache_ttl)) if self.cache else (lambda body: body)
        return built_once(state.built, request, finish)  # measured by prepare_context: not built again

    def check_budgets(self, request: dict[str, Any], state: RunState) -> None:
        """Stop before a call that would take the run over `max_input_tokens` or
        `max_cost_usd` (`agent.budget`)."""
        check_budgets(self, request, state)

    async def call_model(self, request: dict[str, Any], state: RunState) -> Message:
        """One call through the seam, with its usage recorded. A transient failure is tried
        again up to `model_retries` times, each retry budget-checked and each failed attempt
        that may have been billed counted at a conservative estimate (`agent.retry`); a call
        that still fails raises `ModelCallFailed` carrying the partial run."""
        if self.request_log:
            state.sent = append_request(self.request_log, request, state.run_id, state.step, state.sent)
        for attempt in itertools.count():
            started = time.monotonic()
            try:
                response = await settle(self.send(request, state))
                break
            except Exception as error:
                if not await self.retry_after(error, attempt, request, state):
                    raise ModelCallFailed(
                        f"model call failed at step {state.step}: {type(error).__name__}: {error}",
                        state.result(final_text(state.messages), "error"),
                    ) from error
        return book_answer(self, request, response, state, time.monotonic() - started)

    async def send(self, request: dict[str, Any], state: RunState) -> Message:
        """One attempt through the seam (an `AsyncLLM` awaited, a sync `LLM` in a worker
        thread); with `on_event` and a streaming `LLM`, text and thinking deltas are reported
        as they arrive."""
        step, callback = state.step, self.on_event

        def on_delta(kind: str, text: str) -> None:
            emit(callback, Event("thinking" if kind == "thinking" else "text", step, text))

        return await ask(self.llm, request, None if callback is None else on_delta)

    async def retry_after(
        self, error: Exception, attempt: int, request: dict[str, Any], state: RunState
    ) -> bool:
        """After a failed attempt: count what it may have cost, then decide whether to try again
        (a transient error, retries left, and the budgets still allow the next attempt)."""
        if retry.may_be_billed(error):
            book_failed_attempt(self, request, state)
        if not retry.retryable(error) or attempt >= (self.model_retries or 0):
            return False
        wait = retry.backoff_seconds(error, attempt)
        failure, tries = f"{type(error).__name__}: {error}", f"{attempt + 1} of {self.model_retries}"
        log.warning("[step %d] model call failed (%s); retry %s in %.1f s", state.step, failure, tries, wait)
        self.check_budgets(request, state)
        await asyncio.sleep(wait)
        return True

    async def retry_with_room(self, request: dict[str, Any], response: Message, state: RunState) -> Message:
        """Once per step, ask again with twice the `max_tokens` (up to the model's limit) when
        the reply was cut off before saying anything or in the middle of a tool call; the
        retry is budget-checked and billed like any call. With no room to grow, the cut-off
        reply stands and the run ends on `max_tokens`."""
        info = self.models.lookup(self.model)
        ceiling = info.max_output if info else request["max_tokens"] * 2
        larger = min(ceiling, request["max_tokens"] * 2)
        if larger <= request["max_tokens"]:
            return response
        cut = f"reply cut off by max_tokens={request['max_tokens']:,} before it said anything usable"
        log.warning("[step %d] %s; retrying once with max_tokens=%s", state.step, cut, f"{larger:,}")
        emit(self.on_event, Event("retry", state.step, f"max_tokens {request['max_tokens']} -> {larger}"))
        retry = {**request, "max_tokens": larger}
        self.check_budgets(retry, state)
        return await settle(self.call_model(retry, state))

    async def run_tools(self, calls: Sequence[ToolCall], state: RunState) -> list[ToolOutcome]:
        """Run one turn's calls in parallel; outcomes come back in call order.

        Gated tools (`irreversible`, `requires_approval`) ask `approver` first; a denial
        is an error result. Every call and result is recorded in `state.session`.
        """
        state.session.record_usage(state)
        for call in calls:
            emit(self.on_event, Event("tool_call", state.step, tool=call.name, tool_use_id=call.id))
        outcomes = await arun_guarded(self.registry, calls, state.session, self.approver, self.allow)
        warn_outcomes(outcomes, state.step)
        for o in outcomes:
            emit(self.on_event, Event("tool_result", state.step, "", o.call.name, o.call.id, o.is_error))
        return outcomes

    def render_result(self, outcome: ToolOutcome, state: RunState) -> str:
        """The text the model reads for one outcome: whitelisted, compressed or exact by the
        tool's policy, with the full result stored as an artifact (`agent.context.diet`)."""
        return render_outcome(self, outcome, state)

    async def rendered(self, outcomes: Sequence[ToolOutcome], state: RunState) -> Msg:
        """`results_turn`, off the event loop when rendering may call a model (`summarize_with`)."""
        if self.summarize_with:
            return await blocking(self.results_turn, outcomes, state)
        return self.results_turn(outcomes, state)

    def results_turn(self, outcomes: Sequence[ToolOutcome], state: RunState) -> Msg:
        """ONE user message holding every tool_result, in call order."""
        results = [
            tool_result_block(o.call.id, reference_blocks(o) or self.render_result(o, state), o.is_error)
            for o in outcomes
        ]  # a tool search's result is `tool_reference` blocks, which load the tools it found
        return {"role": "user", "content": results}

    def append(self, state: RunState, *new: Msg | None) -> None:
        """Extend the history with new turns (as a new list), recording them in the session."""
        added = [m for m in new if m is not None]
        state.session.record_turn(state, added)
        state.messages = [*state.messages, *added]
