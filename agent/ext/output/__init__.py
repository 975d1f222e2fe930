"""Typed results: the final answer validated into a pydantic model, `result.output`.

    agent = Agent(tools=[...], extensions=[Output(Invoice)])
    result = agent.run("Bill ACME for two hours of support.")
    invoice = result.output                  # an Invoice (typed: Output(Invoice).of(result))

Every request asks for the API's structured outputs, `output_config.format = {"type":
"json_schema", "schema": ...}` (other `output_config` keys, such as `effort`, kept), so the
model's final text is JSON of that schema; tool calls come first as usual, since the format
binds the final text only. The schema is pydantic's (`model_json_schema()`) made acceptable to
the API by the SDK's own transformer (`anthropic.lib._parse._transform.transform_schema`, what
`messages.parse` sends): `additionalProperties: false` on every object, `oneOf` as `anyOf`,
and every keyword the API does not take moved into the description, where the model still
reads it. pydantic still enforces those keywords when the answer is validated.

Why validate, when decoding is constrained: the keywords moved to the description (bounds,
lengths, patterns), pydantic validators, and a reply cut off at `max_tokens` are not held by
the schema. An answer that fails is sent back once, as a user turn that says what failed, and
the model answers again in a normal step (counted against `max_steps` and the budgets, like
any other; `Extension.final_answer` is the seam). A second failure raises `OutputInvalid`,
with the partial result (every answer in its history). A refusal, or a full context window,
raises at once: asking again to fix the JSON would not change either.

Refused at construction, with a `TypeError`: anything but a pydantic model class, and a model
the API's structured outputs cannot express: a free-form mapping (`dict[str, X]`, a model
with `extra="allow"`) needs an object without `additionalProperties: false`, and a field of
`Any` has no type.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pydantic
from anthropic.lib._parse._transform import transform_schema

from agent.errors import AgentError
from agent.extension import Extension
from agent.messages import text_of

if TYPE_CHECKING:
    from anthropic.types import Message

    from agent.errors import RunResult
    from agent.state import RunState

__all__ = ["Output", "OutputInvalid", "api_schema"]

KEY = "output"
FINAL_STOPS = ("end_turn", "stop_sequence", "max_tokens")
"""Stops whose answer is worth sending back to be fixed; any other (a refusal, a full window) raises."""
Msg = dict[str, Any]
T = TypeVar("T", bound=pydantic.BaseModel)


class OutputInvalid(AgentError):
    """The final answer did not validate into the output type once the retries were spent (or the
    model refused); `result` is the run so far, `errors` what failed, `__cause__` pydantic's error."""

    def __init__(self, message: str, result: RunResult | None = None, errors: tuple[str, ...] = ()) -> None:
        super().__init__(message, result)
        self.errors = errors


def api_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema as structured outputs accept it (the SDK's transform); a
    `TypeError` for a model they cannot express (see the module docstring)."""
    if not (inspect.isclass(model) and issubclass(model, pydantic.BaseModel)):
        raise TypeError(f"Output needs a pydantic model class (a BaseModel subclass), not {model!r}")
    raw = model.model_json_schema()
    for where, node in _nodes(raw, model.__name__):
        extra = node.get("additionalProperties")
        if extra is True or isinstance(extra, Mapping):
            raise TypeError(
                f"Output({model.__name__}): {where} is an object with free-form keys (a dict, or "
                "extra='allow'); structured outputs need `additionalProperties: false` on every "
                "object, so the model could only answer {}: use a list of key/value models instead"
            )
    try:
        return transform_schema(raw)
    except ValueError as error:  # a sub-schema with no type (a field of `Any`)
        raise TypeError(f"Output({model.__name__}): {error}") from error


def _nodes(schema: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, node) for `schema` and every schema nested in it."""
    if isinstance(schema, Mapping):
        yield where, schema
        for key, value in schema.items():
            if key in ("properties", "$defs") and isinstance(value, Mapping):
                for name, sub in value.items():
                    yield from _nodes(sub, f"{where}.{name}")
            elif key in ("items", "additionalProperties"):
                yield from _nodes(value, f"{where}[]")
            elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
                for sub in value:
                    yield from _nodes(sub, where)


def _described(error: pydantic.ValidationError) -> tuple[str, ...]:
    """Each of pydantic's errors as `where: what` (the field path, `(answer)` for the whole)."""
    return tuple(
        f"{'.'.join(str(p) for p in e['loc']) or '(answer)'}: {e['msg']}"
        for e in error.errors(include_url=False, include_input=False)
    )


class Output(Extension, Generic[T]):
    """Ask for `model`'s JSON and validate the final answer into it (`RunResult.output`).

    `retries`: how many invalid answers are sent back to be fixed before `OutputInvalid` (1,
    as the answer the model can fix usually needs one look at what failed)."""

    def __init__(self, model: type[T], *, retries: int = 1) -> None:
        if type(retries) is not int or retries < 0:
            raise ValueError(f"Output(retries=...) must be an int >= 0, not {retries!r}")
        self.model, self.retries = model, retries
        self.schema = api_schema(model)

    def __repr__(self) -> str:
        return f"Output({self.model.__name__}, retries={self.retries})"

    def of(self, result: RunResult) -> T:
        """`result.output`, typed as this extension's model (a `TypeError` if it is not one)."""
        if not isinstance(result.output, self.model):
            raise TypeError(f"the run's output is {result.output!r}, not a {self.model.__name__}")
        return result.output

    async def start(self, run: RunState) -> None:
        run.extras[KEY] = 0  # answers sent back so far

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        config = dict(request.get("output_config") or {})
        config["format"] = {"type": "json_schema", "schema": copy.deepcopy(self.schema)}
        return {**request, "output_config": config}

    def final_answer(self, response: Message, run: RunState) -> Msg | None:
        text, stop = text_of(response), response.stop_reason or "end_turn"
        name = self.model.__name__
        if stop not in FINAL_STOPS:
            raise OutputInvalid(
                f"no {name}: the reply stopped with {stop!r}, not an answer to validate",
                run.result(text, "invalid_output", f"stop_reason {stop}"),
            )
        try:
            run.output = self.model.model_validate_json(text)
        except pydantic.ValidationError as error:
            return self._send_back(error, text, stop, run)
        return None

    def _send_back(self, error: pydantic.ValidationError, text: str, stop: str, run: RunState) -> Msg:
        """The user turn that says what failed, or `OutputInvalid` once the retries are spent."""
        errors, sent = _described(error), int(run.extras.get(KEY, 0))
        name, what = self.model.__name__, "; ".join(errors)
        cut = " (the reply was cut off at max_tokens)" if stop == "max_tokens" else ""
        if sent >= self.retries:
            after = f" after {sent} retr{'y' if sent == 1 else 'ies'}" if sent else ""
            raise OutputInvalid(
                f"the final answer is not a valid {name}{cut}{after}: {what}",
                run.result(text, "invalid_output", what),
                errors,
            ) from error
        run.extras[KEY] = sent + 1
        fix = (
            f"Your answer is not a valid {name}{cut}: {what}. Reply again with the whole answer as "
            "JSON matching the schema, with these fixed."
        )
        return {"role": "user", "content": [{"type": "text", "text": fix}]}
