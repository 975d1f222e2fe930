"""The agent loop: call the model, run the tools it asks for, repeat until done.

`Agent.run(prompt)` is the whole story, and each step of it is a method a subclass
may override:

    prepare_context  shrink the history (prune old results, compact the head)
    build_request    the Messages API body (tools, system, effort, cache breakpoints)
    check_budgets    refuse a call that would break a step, token or dollar budget
    call_model       the one call through the `LLM` seam
    run_tools        validate, run in parallel, results back in call order
    render_result    turn one tool's raw return value into the text the model reads

The history is a list of wire-shaped dicts that is never mutated: each step builds
a new list, so the caller's lists and any earlier snapshot stay as they were.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from anthropic.types import Message
from typing_extensions import Unpack

from agent.approval import run_guarded
from agent.config import AgentConfig, AgentOptions, check_effort
from agent.context.artifacts import ArtifactStore
from agent.context.cache import mark_breakpoints
from agent.context.compact import fit_context, summarizer
from agent.context.diet import register_read_artifact, render_outcome
from agent.context.guard import PrefixGuard
from agent.context.prune import artifact_pointers, policies, prune
from agent.context.tokens import Calibration, estimate_tokens, request_tokens
from agent.errors import (
    CostBudgetExceeded,
    ModelCallFailed,
    StepBudgetExceeded,
    TokenBudgetExceeded,
)
from agent.llm import LLM, AnthropicLLM, TokenCounter
from agent.memory import with_memory_note
from agent.messages import (
    Msg,
    assistant_message,
    deep_copy,
    tool_calls,
    tool_result_block,
    user_message,
)
from agent.registry import ToolCall, ToolOutcome, ToolRegistry
from agent.session import Session, pending_turn
from agent.usage import RunUsage, Usage, price_for

__all__ = ["Agent", "RunResult", "RunState"]


@dataclass
class RunResult:
    """How a run ended: the final text, why it stopped, what it cost, what was said."""

    text: str
    stop_reason: str
    usage: RunUsage
    messages: list[Msg]
    detail: str | None = None
    """Why the run ended when that was not a normal final answer."""

    @property
    def steps(self) -> list[Usage]:
        """One usage record per model call."""
        return self.usage.steps


@dataclass
class RunState:
    """Everything one run accumulates; hooks receive it, so one Agent can run twice at once."""

    messages: list[Msg]
    usage: RunUsage = field(default_factory=RunUsage)
    calibration: Calibration = field(default_factory=Calibration)
    step: int = 0
    cache_guard: PrefixGuard = field(default_factory=PrefixGuard)
    run_id: str = field(default_factory=lambda: time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6])
    """Names this run's artifacts folder and session records."""
    session: Session = field(default_factory=Session)
    """The run's record: approvals, started and finished calls; also a JSONL file with `session=`."""
    artifacts: ArtifactStore | None = None
    """Full tool results of this run (created on first use; see `agent.context.diet.store_for`)."""

    def result(self, text: str, stop_reason: str, detail: str | None = None) -> RunResult:
        return RunResult(text, stop_reason, self.usage, list(self.messages), detail)


class Agent(AgentConfig):
    """A model, a system prompt and tools, run in a loop under budgets."""

    def __init__(self, **options: Unpack[AgentOptions]) -> None:
        super().__init__(**options)
        if self.max_cost_usd is not None and price_for(self.model, self.prices) is None:
            raise ValueError(f"max_cost_usd needs a price for {self.model!r}: pass prices=")
        self.registry = ToolRegistry(self.tools, default_timeout=self.tool_timeout)
        register_read_artifact(self.registry, self.artifacts_dir)
        self.llm: LLM = self.llm or AnthropicLLM()

    # -- the loop --------------------------------------------------------------------

    def run(
        self, prompt: str, *, history: Sequence[Msg] = (), session: str | Path | None = None
    ) -> RunResult:
        """Answer `prompt` (after `history`, if any), calling tools until the model is done.

        With `session=path` every turn, approval and tool result is appended to that JSONL
        file as it happens, so `resume(path)` can continue the run after a crash.
        """
        state = RunState(messages=[*deep_copy(history), user_message(prompt)])
        if session is not None:
            state.session = Session.create(
                session, run_id=state.run_id, model=self.model, messages=state.messages
            )
        return state.session.record_run(self.loop, state)

    def resume(self, path: str | Path) -> RunResult:
        """Continue the run recorded in session file `path` (build the agent as for `run`).

        Finished tools are not run again; an irreversible call that started but has no
        recorded result is reported to the model as of unknown outcome, never repeated.
        Budgets count the whole run, before and after the resume.
        """
        session, saved = Session.reopen(path)
        step = max((u.step for u in saved.usage), default=0)
        state = RunState(saved.messages, RunUsage(saved.usage), Calibration(**saved.calibration), step)
        state.run_id = saved.run_id
        state.session = session
        if saved.stop_reason is not None:  # it had finished: nothing to do
            session.close()
            return state.result(final_text(state.messages), saved.stop_reason)

        def finish_turn_then_loop(state: RunState) -> RunResult:
            if saved.pending:  # it died mid-turn: complete that turn before the next model call
                results = [
                    tool_result_block(o.call.id, self.render_result(o, state), o.is_error)
                    for o in self.run_tools(saved.pending, state)
                ]
                self.append(state, pending_turn(saved.pending), {"role": "user", "content": results})
            return self.loop(state)

        return session.record_run(finish_turn_then_loop, state)

    def loop(self, state: RunState) -> RunResult:
        while True:
            if state.step >= self.max_steps:
                raise StepBudgetExceeded(
                    f"max_steps={self.max_steps} reached with the task unfinished",
                    state.result(final_text(state.messages), "max_steps"),
                )
            state.step += 1
            state.messages = self.prepare_context(state)
            request = self.build_request(state)
            self.check_budgets(request, state)
            response = self.call_model(request, state)

            if response.stop_reason == "tool_use":
                outcomes = self.run_tools(tool_calls(response), state)
                results = [
                    tool_result_block(o.call.id, self.render_result(o, state), o.is_error) for o in outcomes
                ]
                self.append(state, assistant_message(response), {"role": "user", "content": results})
            elif response.stop_reason == "pause_turn":
                self.append(state, assistant_message(response))  # sent back as-is to continue
            else:
                cut_off = response.stop_reason not in ("end_turn", "stop_sequence")
                self.append(state, assistant_message(response, drop_tool_uses=cut_off))
                return state.result(
                    text_of(response), response.stop_reason or "end_turn", stop_detail(response)
                )

    # -- the overridable steps -----------------------------------------------------------

    def prepare_context(self, state: RunState) -> list[Msg]:
        """The history to send this step, as a new list (the old one is never edited): old
        tool results pruned to stubs, the head folded into a summary once the request nears
        `max_context_tokens`, and the memory's keys noted in the newest turn."""
        irreversible, protected = policies(self.registry)
        pointer = artifact_pointers(state.artifacts)
        messages = prune(
            state.messages, self.keep_recent, batch=self.prune_batch, protected=protected, pointer_for=pointer
        )
        if self.max_context_tokens:
            counter = self.llm if self.exact_token_count and isinstance(self.llm, TokenCounter) else None
            near = int(self.max_context_tokens * (1 - self.compact_margin) * 0.8)
            log_path = Path(self.usage_log) if self.usage_log else None

            def measure(candidate: Sequence[Msg]) -> int:
                request = self.build_request(replace(state, messages=list(candidate)))
                return request_tokens(request, state.calibration, counter, exact_from=near)

            def record(response: Message) -> None:
                usage = Usage.from_message(state.step, response, prices=self.prices)
                state.usage.add(replace(usage, purpose="summary"), log_path)

            model = self.summarizer_model or self.model
            summarize = summarizer(
                self.llm, model=model, max_tokens=self.max_tokens, prompt=self.summary_prompt, record=record
            )
            messages = fit_context(
                messages,
                summarize,
                limit=self.max_context_tokens,
                margin=self.compact_margin,
                measure=measure,
                size=state.calibration.estimate,
                irreversible=irreversible,
                protected=protected,
                keep_recent=self.keep_recent,
                pointer_for=pointer,
            ).messages
        return with_memory_note(messages, self.memory) if self.memory is not None else messages

    def choose_effort(self, state: RunState) -> str | None:
        """Effort for this step; override to think harder on some steps (the cached
        messages are invalidated whenever the effort changes)."""
        return self.effort

    def build_request(self, state: RunState) -> dict[str, Any]:
        effort = self.choose_effort(state)
        check_effort(effort)
        request: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if self.system:
            request["system"] = [{"type": "text", "text": self.system}]
        if len(self.registry):
            request["tools"] = self.registry.declarations()
        request["messages"] = state.messages
        if effort is not None:
            request["output_config"] = {"effort": effort}
        return mark_breakpoints(request, self.cache_ttl) if self.cache else request

    def check_budgets(self, request: dict[str, Any], state: RunState) -> None:
        """Stop before a call that would take the run over a budget.

        The check uses what was billed so far plus an estimate of this request, so a
        budget is overshot by at most one step's output and estimation error.
        """
        if self.max_input_tokens is None and self.max_cost_usd is None:
            return
        coming = state.calibration.estimate(request)
        spent = state.usage.prompt
        if self.max_input_tokens is not None and spent + coming > self.max_input_tokens:
            raise TokenBudgetExceeded(
                f"next call (~{coming:,} tokens) would take the run past max_input_tokens="
                f"{self.max_input_tokens:,} ({spent:,} used)",
                state.result(final_text(state.messages), "max_input_tokens"),
            )
        price = price_for(self.model, self.prices)
        if self.max_cost_usd is not None and price is not None:
            worst = max(price.input, price.cache_write_1h if self.cache_ttl == "1h" else price.cache_write_5m)
            so_far = state.usage.cost_usd or 0.0
            if so_far + coming * worst / 1e6 > self.max_cost_usd:
                raise CostBudgetExceeded(
                    f"next call (~${coming * worst / 1e6:.4f}) would take the run past "
                    f"max_cost_usd={self.max_cost_usd} (${so_far:.4f} spent)",
                    state.result(final_text(state.messages), "max_cost_usd"),
                )

    def call_model(self, request: dict[str, Any], state: RunState) -> Message:
        """One call through the seam, with its usage recorded; failures keep the partial run."""
        started = time.monotonic()
        try:
            response = self.llm.create(request)
        except Exception as error:
            raise ModelCallFailed(
                f"model call failed at step {state.step}: {type(error).__name__}: {error}",
                state.result(final_text(state.messages), "error"),
            ) from error
        record = Usage.from_message(
            state.step,
            response,
            effort=request.get("output_config", {}).get("effort"),
            latency_s=time.monotonic() - started,
            prices=self.prices,
        )
        state.usage.add(record, Path(self.usage_log) if self.usage_log else None)
        state.calibration.observe(estimate_tokens(request), record.prompt)
        if self.cache:
            state.cache_guard.observe(request, record)
        return response

    def run_tools(self, calls: Sequence[ToolCall], state: RunState) -> list[ToolOutcome]:
        """Run one turn's calls in parallel; outcomes come back in call order.

        Gated tools (`irreversible`, `requires_approval`) ask `approver` first; a denial
        is an error result. Every call and result is recorded in `state.session`.
        """
        state.session.record_usage(state)
        return run_guarded(self.registry, calls, state.session, self.approver, self.allow)

    def render_result(self, outcome: ToolOutcome, state: RunState) -> str:
        """The text the model reads for one outcome: whitelisted, compressed or exact by the
        tool's policy, with the full result stored as an artifact (`agent.context.diet`)."""
        return render_outcome(self, outcome, state)

    def append(self, state: RunState, *new: Msg | None) -> None:
        """Extend the history with new turns (as a new list), recording them in the session."""
        added = [m for m in new if m is not None]
        state.session.record_turn(state, added)
        state.messages = [*state.messages, *added]


# -- small pure helpers -----------------------------------------------------------------


def to_text(value: Any) -> str:
    """A tool's return value as text: strings as they are, everything else as compact JSON."""
    if isinstance(value, str):
        return value or "(empty)"
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace") or "(empty)"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def text_of(response: Message) -> str:
    return "".join(b.text for b in response.content if b.type == "text")


def final_text(messages: Sequence[Msg]) -> str:
    """The newest assistant text in a history (what a run stopped early has to show)."""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            content = message.get("content", [])
            if isinstance(content, str):
                return content
            return "".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


def stop_detail(response: Message) -> str | None:
    if response.stop_reason == "max_tokens":
        return "output hit max_tokens; any tool call in that turn was cut off and not run"
    if response.stop_reason == "refusal":
        return "the model refused to continue"
    if response.stop_reason == "model_context_window_exceeded":
        return "the prompt filled the model's context window"
    return None
