"""`MessagesSimulator`: a strict, local Messages API for tests and offline examples.

Nothing here can reach the real API, yet what this project claims (valid requests
under any history, cache hits, token savings) needs a witness the real SDK talks
to over real HTTP. This is it: a loopback server on an ephemeral port serving
`POST /v1/messages` and `POST /v1/messages/count_tokens`, and the Message Batches API under
`/v1/messages/batches` (`agent.testing.batches`: its requests answered as `/v1/messages` is,
on the same clock; `sim.batches` holds them and its settings).

    with MessagesSimulator(policy) as sim:
        llm = sim.llm()  # = AnthropicLLM(base_url=sim.base_url, api_key="sim", max_retries=0)
        Agent(llm=llm, tools=[calculator]).run("What is 6 × 7?")
        sim.requests        # every /v1/messages body received (parsed JSON, in order)
        sim.usages          # the usage billed for each 200 answer (cache counters included)
        sim.rejected        # (body, violations) for each 400
        sim.count_requests  # bodies sent to /v1/messages/count_tokens
        sim.errors          # tracebacks of a policy that raised

Strict on the way in: a body `validate_request` objects to gets a 400 in the API's
error shape listing every violation; an unknown model gets a 404; a missing
`anthropic-version` header a 400 and a missing key a 401.

Scripted on the way out: `policy(request_body)` returns the answer: a string, a
list of content blocks (dicts or strings), or a dict with `content` and an
optional `stop_reason` (`agent.testing.reply()` builds one). `stop_reason`
defaults to `tool_use` when a tool call is present, else `end_turn`. Requests
without a `tools` key (a compaction summary, say) go to `summarizer` when one is
given. Like the API, the simulator names tool calls itself: ids are
`toolu_sim_<response>_<index>`, deterministic for a given sequence of requests.
A policy that raises gets a 500 `api_error`, and the traceback lands in `.errors`.

Server tools (`agent.testing.server_turns`): a policy may answer with a server tool's
call and result (`scripted.server_call`), with `stop_reason="pause_turn"` too; the
simulator names the ids, refuses calls to tools the request does not declare, counts
`usage.server_tool_use`, and runs code in a container it sends back (`.containers`).

Thinking follows today's models (`agent.testing.output`, `agent.testing.thinking`):
a model that `thinks_by_default` (or `thinking` adaptive/enabled) starts its answer
with a signed thinking block of `thinking(body)` tokens (`thinking=` option; 16 by
default), empty under display "omitted"; thinking and answer share `max_tokens` and
thinking is billed as output (`usage.output_tokens_details.thinking_tokens`). Blocks
sent back are billed as input at their hidden length, must carry this simulator's
signature over unchanged text, and, on models with preserved thinking, must still
sit on the prefix they were produced after (400, or dropped under `drop_block` with
the beta header, listed in `input_transformations`). `secret=` keys the signatures.

Usage follows the prompt-cache rules of `agent.testing.cache_model` (breakpoints,
20-block lookback, per-model minimum, TTL on the injectable `clock`, invalidation
by level) with a deterministic token estimate; uncached + read + write is always
the whole prompt.

Context editing (`context_management`, `agent.testing.context_edits`): the edits apply to
the prompt the policy reads and the cache bills, and the reply lists `applied_edits`. Past a
`compact_20260112` trigger the reply starts with a `compaction` block `summarizer` wrote, billed
as its own `usage.iterations` entry, and the policy reads the summary alone.

`"stream": true` gets the same message as server-sent events (`agent.testing.sse`),
so `messages.stream(...).get_final_message()` equals the non-streamed answer.

Message threads (`thread`, beta `message-threads-2026-08-12`, `agent.testing.threads`): a
`continue` is rebuilt from the conversation the thread holds before anything reads it, so
`sim.requests` holds it as the API reads it (the whole conversation, the thread's `system` and
`tools`), the policy reads and the cache bills that, and `sim.threads.received` keeps every
thread request as it was sent. Threads expire on the same `clock`.

Fault injection (for retry and durability tests), applied to the next
`/v1/messages` requests in the order injected:

    sim.inject(status=429, times=2, retry_after=0)   # two rate-limit errors, then normal
    sim.inject(status=529)                           # one overloaded_error
    sim.inject(malformed=True)                       # one 200 whose body (or event) is cut-off JSON
    sim.inject(delay=2.0)                            # one answer held back 2 s (timeouts)
    sim.inject(cut="mid-text")                       # one stream broken after it started (`CUTS`)

Every faulted request is kept in `.requests`. One answered with an error status (JSON,
before any stream starts) or a malformed body is never validated or billed; a delayed
one is answered normally after the delay (validated and billed, even if the client gave
up waiting, as a server would), and so is a cut stream (billed: the server did the work).
Responses carry `server: agent-from-scratch-simulator`, so a recorded cassette
shows where it came from.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeAlias

import anthropic

from agent.anthropic_llm import AnthropicLLM
from agent.context.compact import transcript
from agent.models import EFFORTS, MODELS, THINKING_TYPES
from agent.testing import context_edits, sse
from agent.testing.answers import Reply, error_body, iterations_of, json_reply, normalize, with_own_iteration
from agent.testing.batches import BatchStore
from agent.testing.cache_model import MIN_CACHEABLE_TOKENS, PromptCache, base_model, block_tokens, render
from agent.testing.deferred import hidden_tools
from agent.testing.mcp_blocks import name_mcp_blocks
from agent.testing.output import compose, sign
from agent.testing.policies import echo_summarizer
from agent.testing.server import SERVER_NAME, LoopbackServer
from agent.testing.server_turns import Containers, check_declared, link_callers, name_calls, server_usage
from agent.testing.signatures import DEFAULT_SECRET, Signer
from agent.testing.thinking import Checked, check_history, mode_of
from agent.testing.threads import Refusal, ThreadStore
from agent.testing.validate import validate_count_tokens, validate_request

__all__ = ["DEFAULT_THINKING_TOKENS", "SERVER_NAME", "Fault", "MessagesSimulator", "Policy"]

DEFAULT_THINKING_TOKENS = 16
"""Tokens of each thinking block unless `thinking=` says otherwise: a short, fixed think."""
Policy: TypeAlias = Callable[[dict[str, Any]], Any]


@dataclass
class Fault:
    """One injected misbehaviour; `times` counts the requests it still applies to."""

    status: int | None = None
    malformed: bool = False
    delay: float = 0.0
    message: str | None = None
    retry_after: float | None = None
    times: int = 1
    cut: str | None = None


CUTS = ("mid-text", "no-stop", "error-event")
"""How a streamed answer can break after it started (`inject(cut=...)`): stop inside the
first text block, end without `message_delta` / `message_stop`, or send an `error` event
(`overloaded_error`) in the middle of a 200 stream."""

_ERROR = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
_OVERLOADED = b"event: error\ndata: " + json.dumps(_ERROR).encode() + b"\n\n"


def cut_stream(body: bytes, how: str) -> bytes:
    """A whole SSE answer, broken the way `how` names (one of `CUTS`)."""
    events = [e for e in body.split(b"\n\n") if e.strip()]
    if how == "no-stop":
        kept = [e for e in events if b"message_delta" not in e and b"message_stop" not in e]
        return b"".join(e + b"\n\n" for e in kept)
    first_delta = next((i for i, e in enumerate(events) if b"content_block_delta" in e), len(events) - 1)
    head = b"".join(e + b"\n\n" for e in events[: first_delta + 1])
    return head + (_OVERLOADED if how == "error-event" else b"")


def _default_policy(body: dict[str, Any]) -> Any:
    return "ok"


def _default_thinking(body: dict[str, Any]) -> int:
    return DEFAULT_THINKING_TOKENS


class MessagesSimulator:
    """A loopback Messages API; use as a context manager (or `start()` / `stop()`)."""

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        summarizer: Policy | None = None,
        thinking: Callable[[dict[str, Any]], int] | None = None,
        secret: bytes = DEFAULT_SECRET,
        clock: Callable[[], float] = time.monotonic,
        models: Mapping[str, int] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.policy = policy or _default_policy
        self.summarizer = summarizer
        self.thinking = thinking or _default_thinking
        """`thinking(request_body)`: tokens of each thinking block the model writes (0: none)."""
        self.signer = Signer(secret)
        self.cache = PromptCache(clock=clock)
        self.models = {**MIN_CACHEABLE_TOKENS, **(models or {})}
        """Known model ids and their minimum cacheable length; others get a 404."""
        self.requests: list[dict[str, Any]] = []
        self.usages: list[dict[str, Any]] = []
        self.count_requests: list[dict[str, Any]] = []
        self.rejected: list[tuple[dict[str, Any], list[str]]] = []
        self.errors: list[str] = []
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._address = (host, port)
        self._server: LoopbackServer | None = None
        self._responses = 0
        self.containers = Containers()
        """Code-execution containers made by scripted server-tool turns (`server_turns`)."""
        self.batches = BatchStore(self._batched, clock)
        """The Message Batches API's batches and how they are processed (`agent.testing.batches`)."""
        self.threads = ThreadStore(clock)
        """The message threads the API holds between turns (`agent.testing.threads`)."""

    # -- lifecycle ------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the simulator is not running: use `with MessagesSimulator(...) as sim:`")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def llm(self, **options: Any) -> AnthropicLLM:
        """An `AnthropicLLM` pointed here (no retries, so a failure shows at once)."""
        settings: dict[str, Any] = {"base_url": self.base_url, "api_key": "sim", "max_retries": 0}
        return AnthropicLLM(**{**settings, **options})

    def client(self, **options: Any) -> anthropic.Anthropic:
        """A raw SDK client pointed here, for tests that send hand-made bodies."""
        settings: dict[str, Any] = {"base_url": self.base_url, "api_key": "sim", "max_retries": 0}
        return anthropic.Anthropic(**{**settings, **options})

    def start(self) -> MessagesSimulator:
        if self._server is None:
            self._server = LoopbackServer(self._address, self.handle)
            self._server.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> MessagesSimulator:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- faults ---------------------------------------------------------------------

    def inject(
        self,
        *,
        status: int | None = None,
        malformed: bool = False,
        delay: float = 0.0,
        times: int = 1,
        message: str | None = None,
        retry_after: float | None = None,
        cut: str | None = None,
    ) -> None:
        """Misbehave on the next `times` `/v1/messages` requests (see the module docstring)."""
        if status is None and not malformed and delay <= 0 and cut is None:
            raise ValueError("inject() needs status=, malformed=True, delay= or cut=")
        if cut is not None and cut not in CUTS:
            raise ValueError(f"cut must be one of {', '.join(CUTS)}, not {cut!r}")
        if status is not None and not 400 <= status <= 599:
            raise ValueError(f"status must be an HTTP error status (400-599), not {status}")
        if times < 1:
            raise ValueError("times must be at least 1")
        with self._lock:
            self._faults.append(Fault(status, malformed, delay, message, retry_after, times, cut))

    # -- the API --------------------------------------------------------------------

    def handle(self, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> Reply:
        """Answer one HTTP request (the server calls this; tests may too)."""
        path = path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in headers.items()}
        if path.startswith("/v1/messages/batches"):
            return self.batches.handle(method, path, headers, raw)
        if method == "GET":
            return model_info(path)
        with self._lock:
            body = _parse(method, path, raw)
            if isinstance(body, Reply):
                return body
            fault = unthreadable = None
            if path == "/v1/messages":
                body, unthreadable = self.threads.take(body, headers)  # a `continue`, rebuilt
                self.requests.append(copy.deepcopy(body))
                fault = self._next_fault()
            else:
                self.count_requests.append(copy.deepcopy(body))
        if fault is not None:
            time.sleep(fault.delay)  # outside the lock: other requests go on meanwhile
            if fault.status is not None:
                extra = {} if fault.retry_after is None else {"retry-after": f"{fault.retry_after:g}"}
                text = fault.message or f"injected {fault.status}"
                return json_reply(fault.status, error_body(fault.status, text), extra)
            if fault.malformed and body.get("stream") is True:
                cut = b'event: message_start\ndata: {"type": "message_start", "message": {"id": "msg_sim_\n\n'
                return Reply(200, cut, {"content-type": sse.CONTENT_TYPE})
            if fault.malformed:
                return Reply(200, b'{"id": "msg_sim_malformed", "type": "message", "content": [', {})
        with self._lock:
            reply = self._respond(path, headers, body, unthreadable=unthreadable)
        if fault is not None and fault.cut is not None and body.get("stream") is True and reply.status == 200:
            return Reply(reply.status, cut_stream(reply.body, fault.cut), reply.headers)
        return reply

    def _batched(self, params: dict[str, Any], headers: Mapping[str, str]) -> Reply:
        """One request of a batch, answered as `POST /v1/messages` is (kept in `.requests`, an
        injected status fault applied), billed at the `batch` service tier."""
        with self._lock:
            self.requests.append(copy.deepcopy(params))
            fault = self._next_fault()
            if fault is not None and fault.status is not None:
                return json_reply(
                    fault.status, error_body(fault.status, fault.message or f"injected {fault.status}")
                )
            return self._respond("/v1/messages", headers, params, tier="batch")

    def _respond(
        self,
        path: str,
        headers: Mapping[str, str],
        body: dict[str, Any],
        tier: str = "standard",
        unthreadable: Refusal | None = None,
    ) -> Reply:
        if "x-api-key" not in headers and "authorization" not in headers:
            return json_reply(401, error_body(401, "x-api-key header is required"))
        if "anthropic-version" not in headers:
            return json_reply(400, error_body(400, "anthropic-version: header is required"))
        if unthreadable is not None:  # a `thread` the API would not serve
            if unthreadable.status == 400:
                self.rejected.append((copy.deepcopy(body), [unthreadable.message]))
            return unthreadable.reply()
        counting = path.endswith("/count_tokens")
        check = validate_count_tokens if counting else validate_request
        errors = check(body, api_version=headers["anthropic-version"])  # the rules of the client's version
        if errors:
            return self._reject(body, errors, f"{len(errors)} validation error(s): " + "; ".join(errors))
        model = str(body["model"])
        if base_model(model) not in self.models:
            return json_reply(404, error_body(404, f"model: {model}"))
        mode = mode_of(body, headers)
        if isinstance(mode, str):
            return self._reject(body, [mode], mode)
        checked = check_history(body, self.signer, mode)
        if checked.error is not None:
            return self._reject(body, [checked.error], checked.error)
        refused = context_edits.refusal(body, headers)
        if refused is not None:
            return self._reject(body, [refused], refused)
        if counting:  # dropped thinking blocks are not counted, nor billed; context edits apply
            return json_reply(200, context_edits.counted(checked.body))
        return self._answer(body, checked, self.models[base_model(model)], tier)

    def _reject(self, body: dict[str, Any], errors: list[str], message: str) -> Reply:
        self.rejected.append((copy.deepcopy(body), errors))
        return json_reply(400, error_body(400, message))

    def _answer(self, body: dict[str, Any], checked: Checked, minimum: int, tier: str = "standard") -> Reply:
        edited = context_edits.apply_edits(checked.body)  # `context_management`, applied server-side
        prompt = edited.body  # what the model sees: failed `drop_block` thinking removed, edits applied
        use_summarizer = "tools" not in body and self.summarizer is not None
        policy = self.summarizer if use_summarizer and self.summarizer else self.policy
        number = f"{self._responses + 1:04d}"
        try:
            compaction = self._compact(prompt, minimum)
            if compaction is not None:  # the model goes on from the summary alone
                prompt = {**prompt, "messages": [{"role": "assistant", "content": [compaction[0]]}]}
            if compaction is not None and compaction[2]:  # pause_after_compaction: the block alone
                answer: Any = {"content": [], "stop_reason": "compaction"}
            else:
                answer = policy(copy.deepcopy(prompt))
            content, stop_reason = normalize(answer)
            iterations = iterations_of(answer)
            calls = [b for b in content if b["type"] == "tool_use"]
            unseen = sorted({str(b.get("name")) for b in calls} & hidden_tools(prompt))
            if unseen:  # a model cannot call a deferred tool before a tool_reference loads it
                raise AssertionError(f"the policy called deferred tools not loaded yet: {unseen}")
            for index, block in enumerate(calls):
                block["id"] = f"toolu_sim_{number}_{index}"  # named before the cut: the id costs tokens
            name_calls(content, number)
            link_callers(content, body)
            check_declared(content, body)
            name_mcp_blocks(content, body, number)
            paused = compaction is not None and compaction[2]
            think = functools.cache(lambda: 0 if paused else int(self.thinking(copy.deepcopy(prompt))))
            output = compose(content, stop_reason, checked.mode, think, int(body["max_tokens"]))
        except Exception:
            self.errors.append(traceback.format_exc())
            return json_reply(
                500, error_body(500, "the simulator's policy raised; see MessagesSimulator.errors")
            )
        self._responses += 1
        if paused and compaction is not None:  # the summary was the only sampling
            usage = {k: v for k, v in compaction[1].items() if k != "type"}
        else:
            usage = self.cache.account_positions(render(prompt), minimum).to_json()
            usage["output_tokens"] = output.output_tokens
        if output.thinking_tokens is not None:
            usage["output_tokens_details"] = {"thinking_tokens": output.thinking_tokens}
        usage["service_tier"] = tier
        if compaction is not None:
            own = [] if paused else (iterations or [{"type": "message"}])
            iterations = [compaction[1], *own]
        if iterations is not None:
            usage["iterations"] = with_own_iteration(iterations, usage)
        kept = [piece.block for piece in output.pieces]
        server = server_usage(kept, body)
        if server is not None:
            usage["server_tool_use"] = server
        self.usages.append(usage)
        message: dict[str, Any] = {
            "id": f"msg_sim_{number}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [
                *([compaction[0]] if compaction is not None else []),
                *sign(output, checked, self.signer, f"msg_sim_{number}"),
            ],
            "stop_reason": output.stop_reason,
            "stop_sequence": None,
            "stop_details": None,
            "usage": usage,
        }
        container = self.containers.for_reply(body, kept, number)
        if container is not None:
            message["container"] = container
        if edited.applied is not None:
            message["context_management"] = {"applied_edits": edited.applied}
        elif any(b["type"] == "compaction" for b in message["content"]):
            message["context_management"] = {"applied_edits": []}  # as recorded with a compaction
        transformations = checked.transformations()
        if transformations is not None:
            message["input_transformations"] = transformations
        if tier == "standard":  # a batch's requests hold no thread
            self.threads.keep(body, message)
        headers = {"request-id": f"req_sim_{number}"}
        if body.get("stream") is True:
            return Reply(
                200, context_edits.stream_body(message), {**headers, "content-type": sse.CONTENT_TYPE}
            )
        return json_reply(200, message, headers)

    def _compact(
        self, prompt: dict[str, Any], minimum: int
    ) -> tuple[dict[str, Any], dict[str, Any], bool] | None:
        """Server-side compaction, when the request asks for it and its prompt is past the trigger:
        (the `compaction` block, its `usage.iterations` entry, paused). The summary step reads and
        writes the cache as a request on the whole prompt would."""
        edit = context_edits.compaction_due(prompt)
        if edit is None:
            return None
        ask = edit.get("instructions") or context_edits.COMPACTION_PROMPT
        text = transcript(prompt.get("messages") or []) + "\n\n" + ask
        request = {
            "model": prompt["model"],
            "max_tokens": prompt["max_tokens"],
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        }
        written, _ = normalize((self.summarizer or echo_summarizer)(request))
        summary = "".join(b["text"] for b in written if b["type"] == "text") or "(nothing to summarize)"
        usage = self.cache.account_positions(render(prompt), minimum).to_json()
        entry = {
            "type": "compaction",
            **usage,
            "output_tokens": block_tokens({"type": "text", "text": summary}),
        }
        return {"type": "compaction", "content": summary}, entry, edit.get("pause_after_compaction") is True

    def _next_fault(self) -> Fault | None:
        if not self._faults:
            return None
        fault = self._faults[0]
        fault.times -= 1
        if fault.times <= 0:
            self._faults.pop(0)
        return fault


def model_info(path: str) -> Reply:
    """`GET /v1/models/{id}`: the model table's facts in the API's `ModelInfo` shape (the
    effort and thinking capabilities; the others are not modelled and left out)."""
    model = path.removeprefix("/v1/models/")
    info = MODELS.lookup(model) if path.startswith("/v1/models/") else None
    if info is None:
        return json_reply(404, error_body(404, f"GET {path}: not found"))
    effort = {e: {"supported": e in info.efforts} for e in EFFORTS}
    kinds = {k: {"supported": k in info.thinking_types} for k in THINKING_TYPES}
    capabilities = {
        "effort": {"supported": bool(info.efforts), **effort},
        "thinking": {"supported": True, "types": kinds},
    }
    body = {"type": "model", "id": info.id, "display_name": info.id, "created_at": "2026-01-01T00:00:00Z"}
    return json_reply(200, {**body, "capabilities": capabilities})


def _parse(method: str, path: str, raw: bytes) -> dict[str, Any] | Reply:
    if method != "POST" or path not in ("/v1/messages", "/v1/messages/count_tokens"):
        return json_reply(404, error_body(404, f"{method} {path}: not found"))
    try:
        body = json.loads(raw or b"null")
    except ValueError as error:
        return json_reply(400, error_body(400, f"request body is not valid JSON: {error}"))
    if not isinstance(body, dict):
        return json_reply(400, error_body(400, "request body must be a JSON object"))
    return body
