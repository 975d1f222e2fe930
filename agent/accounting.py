"""One model call and what it leaves in the run's books.

`call_with_retries` is the loop's `call_model`. The agent retries itself (the SDK's retries are
off) because the SDK's are invisible: a call that timed out twice reports one usage where the
server may have billed three. So each failed attempt is booked at a conservative estimate and the
budgets are checked before each retry: overshot by at most one call (`agent.retries`). An answer
that carries no usage is estimated, never booked as free.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from anthropic.types import Message
from anthropic.types import Usage as SDKUsage

from agent.context.history import SummaryCutOff
from agent.context.tokens import estimate_tokens, prompt_estimate
from agent.errors import MissingAPIKey, ModelCallFailed
from agent.events import Event, emit
from agent.llm import LLM
from agent.messages import final_text, text_of
from agent.models import ModelInfo
from agent.render import redact
from agent.state import check_budgets
from agent.steps import ask
from agent.usage import TOKEN_COUNTS, ImpossibleUsage, Usage, billed_iterations, undeclared

if TYPE_CHECKING:
    from agent.config import AgentConfig
    from agent.state import RunState

__all__ = [
    "ImpossibleUsage",
    "book_answer",
    "book_usage",
    "call_with_retries",
    "check_usage",
    "larger_budget",
    "summarizer",
]

log = logging.getLogger("agent")


def book_usage(config: AgentConfig, state: RunState, record: Usage) -> None:
    """Add one usage record to the run (and to the JSONL usage log, if there is one)."""
    state.usage.add(record, Path(config.usage_log) if config.usage_log else None, state.run_id)


def book_answer(
    config: AgentConfig,
    request: Mapping[str, Any],
    response: Message,
    state: RunState,
    latency_s: float,
    raw: int | None = None,
) -> Message:
    """Book `response` to `request` (whose `prompt_estimate` is `raw`): priced, logged, the token
    calibration and the prefix guard told; returned, with an estimated usage if it had none."""
    raw = prompt_estimate(request) if raw is None else raw
    if getattr(response, "usage", None) is None:
        log.warning("[step %d] the response carried no usage; recording an estimate", state.step)
        content = [b.model_dump(mode="json") for b in response.content]
        guess = {
            "input_tokens": state.calibration.estimate(request, raw),
            "output_tokens": estimate_tokens(content),
        }
        response = response.model_copy(update={"usage": SDKUsage.model_validate(guess)})
    effort = (request.get("output_config") or {}).get("effort")
    record = Usage.from_message(
        state.step, response, effort=effort, latency_s=latency_s, models=config.models, model=request["model"]
    )
    book_usage(config, state, record)
    calibration = state.calibration
    calibration.observe(raw, record.prompt_sent(), calibration.hidden_tokens(request))
    details = response.usage.output_tokens_details
    if details is not None and details.thinking_tokens:
        calibration.note_thinking(
            [b.model_dump(mode="json") for b in response.content], details.thinking_tokens
        )
    if config.cache:
        reported = getattr(response.usage, "cache_read_input_tokens", None) is not None
        edits = server_edits(response) if "context_management" in request else []
        state.cache_guard.observe(request, record, reported=reported, server_edits=edits)
    return response


def server_edits(response: Message) -> list[str]:
    """The types of the context edits the server applied (`context_management.applied_edits`),
    plus "compaction" when the reply starts from a summary: they rewrite what the cache saw."""
    managed = undeclared(response, "context_management")
    if managed is not None and hasattr(managed, "model_dump"):
        managed = managed.model_dump()
    edits = managed.get("applied_edits") if isinstance(managed, Mapping) else None
    if not isinstance(edits, list):
        edits = []
    applied = [str(e.get("type", "edit")) for e in edits if isinstance(e, Mapping)]
    compacted = any(getattr(block, "type", None) == "compaction" for block in response.content)
    return [*applied, "compaction"] if compacted else applied


async def call_with_retries(config: AgentConfig, request: dict[str, Any], state: RunState) -> Message:
    """The answer to `request`, booked; `ModelCallFailed` (with the partial run) once the
    retries are spent or the error is not transient."""
    raw = state.raw_estimate(request)
    check_budgets(request, state, config.budget_policy(), raw)
    for attempt in itertools.count():
        started = time.monotonic()
        try:
            response = await _send(config, request, state)
            check_usage(response)
            break
        except (MissingAPIKey, ModelCallFailed) as error:  # the LLM's own account (no key, a cassette
            # miss) says it best: raised as itself, with the run so far and nothing chained
            error.result = state.result(final_text(state.messages), "error")
            raise error.with_traceback(None) from None
        except Exception as error:
            from agent.retries import retry_after  # loaded by the runs whose model call fails

            if not await retry_after(config, error, attempt, request, state, raw, book_usage):
                raise ModelCallFailed(
                    redact(f"model call failed at step {state.step}: {type(error).__name__}: {error}"),
                    state.result(final_text(state.messages), "error"),
                ) from error
    return book_answer(config, request, response, state, time.monotonic() - started, raw)


def check_usage(response: Message) -> None:
    """Raise `ImpossibleUsage` unless every token count, iterations' included, is a whole number >= 0."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return
    for name in TOKEN_COUNTS:
        value = getattr(usage, name, None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ImpossibleUsage(f"the answer reports usage.{name}={value!r}")
    try:
        billed_iterations(usage)
    except ValueError as error:
        raise ImpossibleUsage(str(error)) from None


async def _send(config: AgentConfig, request: dict[str, Any], state: RunState) -> Message:
    """One attempt; with `on_event` and a streaming `LLM`, deltas are reported as they come."""
    step, callback = state.step, config.on_event

    def on_delta(kind: str, text: str) -> None:
        emit(callback, Event("thinking" if kind == "thinking" else "text", step, text))

    return await ask(cast(LLM, config.llm), request, None if callback is None else on_delta)


def larger_budget(request: Mapping[str, Any], info: ModelInfo | None, step: int) -> int | None:
    """Twice `max_tokens`, up to the model's limit, for a reply cut off before it said anything usable."""
    asked = int(request["max_tokens"])
    larger = min(info.max_output if info else asked * 2, asked * 2)
    if larger <= asked:
        return None
    cut = f"reply cut off by max_tokens={request['max_tokens']:,} before it said anything usable"
    log.warning("[step %d] %s; retrying once with max_tokens=%s", step, cut, f"{larger:,}")
    return larger


def summarizer(config: AgentConfig, state: RunState) -> Callable[[str], str]:
    """One tool-less, budget-checked call per summary; its cost lands in the run's usage."""

    def summarize(transcript: str) -> str:
        from agent.context.compact import SUMMARY_PROMPT, summary_request

        llm, policy, budgets = cast(LLM, config.llm), config.history_policy(), config.budget_policy()
        info = policy.models.lookup(policy.summarizer_model)
        request = summary_request(
            transcript,
            model=policy.summarizer_model,
            max_tokens=policy.max_tokens,
            prompt=policy.summary_prompt or SUMMARY_PROMPT,
            # a summary needs no reasoning budget: thinking off where the model allows it
            thinking_off=info is not None and info.thinks_by_default and "disabled" in info.thinking_types,
        )
        check_budgets(request, state, budgets)
        response = llm.create(request)
        check_usage(response)
        usage = Usage.from_message(state.step, response, models=policy.models, model=request["model"])
        book_usage(config, state, replace(usage, purpose="summary"))
        if response.stop_reason == "max_tokens":
            raise SummaryCutOff(f"the summary was cut off by max_tokens={request['max_tokens']:,}")
        return text_of(response).strip()

    return summarize
