"""The agent loop: call the model, run the tools it asks for, repeat until done.

`Agent.run(prompt)` is the whole story. Each step is a method a subclass may override
(a coroutine step may be overridden by a plain method):

    prepare_context  the history to send: old results pruned, the head compacted near the window
    build_request    the Messages API body: tools, system, messages, effort, cache breakpoints
    call_model       the one call through the `LLM` seam: refused if it would break a token or
                     dollar budget, retried when transient, its usage booked
    run_tools        run one turn's calls in parallel; results come back in call order
    render_result    the text the model reads for one tool result (the diet)

Everything else is an `Extension` (`agent.extension`): the loop calls their hooks at these
points and names none. The history is never mutated: each step builds a new list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anthropic.types import Message

from agent import accounting, models
from agent import messages as wire
from agent.config import AgentConfig
from agent.context import cache, diet, history, thinking
from agent.errors import AgentError, StepBudgetExceeded
from agent.events import Event, emit
from agent.extension import Extension, hooked, rejected
from agent.state import RunResult, RunState
from agent.steps import blocking, run_sync, settle
from agent.tool_runs import run_turn
from agent.tools import ToolCall, ToolOutcome

__all__ = ["Agent", "RunResult", "RunState"]


class Agent(AgentConfig):
    """A model, a system prompt and tools, run in a loop under budgets."""

    def run(
        self, prompt: str, *, history: Sequence[wire.Msg] = (), extensions: Sequence[Extension] = ()
    ) -> RunResult:
        """Answer `prompt` (after `history`, if any), calling tools until the model is done.
        `extensions` join the agent's own for this run only, ahead of them (a session file).
        An `AgentError` is raised from here: the loop's frames would only hide its message."""
        try:
            return run_sync(lambda: self.arun(prompt, history=history, extensions=extensions))
        except AgentError as error:
            raise error.with_traceback(None)  # noqa: B904 - the error itself, its cause kept

    async def arun(
        self, prompt: str, *, history: Sequence[wire.Msg] = (), extensions: Sequence[Extension] = ()
    ) -> RunResult:
        """`run`, awaited: many runs can share one event loop."""
        messages = wire.opening_messages(history, prompt, tools_declared=len(self.registry) > 0)
        return await self.arun_state(RunState(messages=messages, prompt=prompt), extensions)

    async def arun_state(self, state: RunState, extensions: Sequence[Extension] = ()) -> RunResult:
        """Run from `state`: a fresh one, or one an extension restored (a resumed session)."""
        state.agent, state.extensions = self, [*extensions, *self.extensions]
        try:
            async with hooked(state):  # each extension's `start`, then its `finish`
                return await self.loop(state)
        finally:
            state.workers.close()
            if state.artifacts is not None:
                state.artifacts.close()

    async def loop(self, state: RunState) -> RunResult:
        """Step until the model gives a final answer or a budget stops the run."""
        if state.pending is not None:  # restored mid-turn: answer that turn's calls first
            (reply, pending), state.pending = state.pending, None
            outcomes = await settle(self.run_tools(pending, state))
            self.append(state, reply, await self.rendered(outcomes, state))
        while True:
            if state.step >= self.max_steps:
                raise StepBudgetExceeded(
                    f"max_steps={self.max_steps} reached with the task unfinished",
                    state.result(wire.final_text(state.messages), "max_steps"),
                )
            state.step += 1
            emit(self.on_event, Event("step_start", state.step))
            shrink = self.prepare_context  # may call the model to compact: off the event loop then
            state.messages = await blocking(shrink, state) if self.max_context_tokens else shrink(state)
            request = self.build_request(state)
            response = await settle(self.call_model(request, state))
            if wire.cut_off_early(response):
                response = await settle(self.retry_with_room(request, response, state))
            emit(self.on_event, Event("step_end", state.step, response.stop_reason or ""))

            turn, calls = wire.reply_turn(response, after=state.messages)
            if response.stop_reason == "tool_use" and calls:
                outcomes = await settle(self.run_tools(calls, state))
                self.append(state, turn, await self.rendered(outcomes, state))
            elif response.stop_reason == "pause_turn":
                self.append(state, turn)  # continued by the next call
            else:  # a final answer or a turn cut off: no call runs now, none is left unanswered
                final = wire.assistant_message(response, drop_tool_uses=True, after=state.messages)
                self.append(state, final)
                if again := rejected(response, state):  # not accepted: sent back, a step like any other
                    self.append(state, again)
                    continue
                stop = response.stop_reason or "end_turn"
                return state.result(wire.text_of(response), stop, wire.stop_detail(stop))

    def prepare_context(self, state: RunState) -> list[wire.Msg]:
        """The history to send this step, as a new list (`agent.context.history`), then
        each extension's `history` hook."""
        messages = history.shrink(
            state.messages,
            state.step,
            self.history_policy(),
            calibration=state.calibration,
            prompt=state.prompt,
            measure=lambda candidate: self.measure(state, candidate),
            summarize=accounting.summarizer(self, state),
            store=state.artifacts,
        )
        for ext in state.extensions:
            messages = ext.history(messages, state)
        return messages

    def choose_effort(self, state: RunState) -> str | None:
        """Effort for this step (a change invalidates the cached messages)."""
        return self.effort

    def build_request(self, state: RunState) -> dict[str, Any]:
        """The request body in the API's cache order (tools, system, messages), cache
        breakpoints placed, then each extension's `request` hook."""
        effort = self.choose_effort(state)
        models.check_effort(effort, self.models.lookup(self.model))
        think, betas = thinking.thinking_param(self.thinking, self.history_strategy())
        request: dict[str, Any] = {"model": self.model, "max_tokens": self.output_budget()}
        if self.system:
            request["system"] = [{"type": "text", "text": self.system}]
        if len(self.registry):
            request["tools"] = self.registry.declarations()
        request["messages"] = state.messages
        if think is not None:
            request["thinking"] = think
        if effort is not None:
            request["output_config"] = {"effort": effort}
        betas = [*betas, *(b for b in self.registry.betas() if b not in betas)]  # server tools' too
        if betas:
            request["betas"] = betas  # sent as the anthropic-beta header, not in the body
        if self.cache:
            request = cache.mark_breakpoints(request, self.cache_ttl, self.newest_pruned(state, request))
        for ext in state.extensions:
            request = ext.request(request, state)
        return request

    async def call_model(self, request: dict[str, Any], state: RunState) -> Message:
        """One call through the seam, budget-checked before each attempt, retried when transient
        and booked; one that still fails raises `ModelCallFailed` with the partial run."""
        response = await accounting.call_with_retries(self, request, state)
        for ext in state.extensions:
            response = ext.response(response, state)
        return response

    async def retry_with_room(self, request: dict[str, Any], response: Message, state: RunState) -> Message:
        """Once per step, ask again with twice the `max_tokens` (up to the model's limit) when
        the reply was cut off before saying anything usable; without room, the reply stands."""
        larger = accounting.larger_budget(request, self.models.lookup(self.model), state.step)
        if larger is None:
            return response
        emit(self.on_event, Event("retry", state.step, f"max_tokens {request['max_tokens']} -> {larger}"))
        return await settle(self.call_model({**request, "max_tokens": larger}, state))

    async def run_tools(self, calls: Sequence[ToolCall], state: RunState) -> list[ToolOutcome]:
        """One turn's calls in parallel, through the extensions' tool hooks; in call order."""
        return await run_turn(self.tools_for(state), calls, state, self.on_event)

    def render_result(self, outcome: ToolOutcome, state: RunState) -> str | list[dict[str, Any]]:
        """The content the model reads for one outcome: an extension's, else the diet's."""
        extensions: list[Extension] = state.extensions  # typed here: `agent.state` cannot import the seam
        for ext in extensions:
            if (content := ext.render(outcome, state)) is not None:
                return content
        return diet.render_outcome(outcome, self.diet_policy(outcome), lambda: self.artifact_store(state))

    async def rendered(self, outcomes: Sequence[ToolOutcome], state: RunState) -> wire.Msg:
        """ONE user message of every tool_result in call order (an extension's renderer may
        call a model: off the event loop then)."""

        def render_all() -> list[str | list[dict[str, Any]]]:
            return [self.render_result(o, state) for o in outcomes]

        renders = any(type(ext).render is not Extension.render for ext in state.extensions)
        pairs = zip(outcomes, await blocking(render_all) if renders else render_all(), strict=True)
        blocks = [wire.tool_result_block(o.call.id, r, o.is_error) for o, r in pairs]
        return {"role": "user", "content": blocks}

    def append(self, state: RunState, *new: wire.Msg | None) -> None:
        """Extend the history with new turns (as a new list); extensions `record` them."""
        added = [m for m in new if m is not None]
        state.messages = [*state.messages, *added]
        for ext in state.extensions:
            ext.record(added, state)
