"""Signatures on the simulator's thinking blocks: what each records, and how it is checked.

A thinking block must come back exactly as it was sent, and (on models with
preserved thinking) on the conversation it was produced in; its signature is what
the simulator checks that against, statelessly, so any number of runs can share one
simulator and a re-recorded cassette comes out identical.

Format: `<payload>.<mac>`, both base64url without padding. The payload is compact
JSON: `k` block type, `n` hidden thinking tokens (what the block costs as input when
sent back, whatever the length of the text the client saw), `id`, `prev` (the thinking
block before it, or null), `d` (how many thinking blocks the model had seen), `p`, `t`,
`s` (digests of the whole prefix, of `tools` and of `system`). The mac is HMAC-SHA256,
keyed by the simulator's secret, over the payload and the block's visible text: change
either and `Signer.open` returns None. A `redacted_thinking` block carries the same
string in `data`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_SECRET", "THINKING_BLOCKS", "Seal", "Signer", "compact", "hidden_tokens"]

DEFAULT_SECRET = b"agent-from-scratch-simulator"
"""Fixed by default so the same requests always get the same signatures (cassettes)."""
THINKING_BLOCKS = ("thinking", "redacted_thinking")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


@dataclass(frozen=True)
class Seal:
    """What a signature records about its block."""

    kind: str
    tokens: int
    id: str
    prev: str | None
    depth: int
    prefix: str
    tools: str
    system: str

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.kind,
            "n": self.tokens,
            "id": self.id,
            "prev": self.prev,
            "d": self.depth,
            "p": self.prefix,
            "t": self.tools,
            "s": self.system,
        }


def _read_payload(signature: Any) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(signature, str) or signature.count(".") != 1:
        return None
    encoded = signature.split(".", 1)[0]
    try:
        payload = json.loads(_unb64(encoded))
    except ValueError:
        return None
    return (encoded, payload) if isinstance(payload, dict) else None


def _signature_of(block: Mapping[str, Any]) -> Any:
    return block.get("data") if block.get("type") == "redacted_thinking" else block.get("signature")


def hidden_tokens(block: Any) -> int | None:
    """The thinking tokens a simulator-signed block stands for (unverified), else None.

    Sent back, a thinking block costs its full hidden length as input, not the length
    of the (possibly empty) text the client sees.
    """
    if not isinstance(block, Mapping) or block.get("type") not in THINKING_BLOCKS:
        return None
    read = _read_payload(_signature_of(block))
    tokens = read[1].get("n") if read else None
    return tokens if isinstance(tokens, int) and tokens >= 0 else None


@dataclass(frozen=True)
class Signer:
    """Signs thinking blocks and opens their signatures (HMAC over payload and visible text)."""

    secret: bytes = DEFAULT_SECRET

    def _mac(self, encoded: str, kind: str, text: str) -> str:
        message = f"{encoded}\x00{kind}\x00{text}".encode()
        return _b64(hmac.new(self.secret, message, hashlib.sha256).digest())

    def sign(self, seal: Seal, text: str = "") -> str:
        encoded = _b64(compact(seal.to_json()).encode())
        return f"{encoded}.{self._mac(encoded, seal.kind, text)}"

    def open(self, block: Mapping[str, Any]) -> Seal | None:
        """The block's seal, or None when the signature is not this simulator's or the text changed."""
        kind = str(block.get("type"))
        signature = _signature_of(block)
        read = _read_payload(signature)
        if read is None:
            return None
        encoded, payload = read
        text = block.get("thinking") if kind == "thinking" else ""
        if not isinstance(text, str) or payload.get("k") != kind:
            return None
        if not hmac.compare_digest(str(signature).split(".", 1)[1], self._mac(encoded, kind, text)):
            return None
        try:
            return Seal(
                kind,
                int(payload["n"]),
                str(payload["id"]),
                payload["prev"],
                int(payload["d"]),
                str(payload["p"]),
                str(payload["t"]),
                str(payload["s"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
