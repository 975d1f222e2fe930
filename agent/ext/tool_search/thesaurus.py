"""Words people use for the things tools are named after, to widen a query.

A task says "file a bug", "find the email", "the folder", "my appointment"; tools say
`create_issue`, `search`, `directory`, `event`. Without a model to rephrase the query,
BM25 never links the two. This is a small, general thesaurus of the vocabulary of
software tools and office work (actions, objects, a few everyday domains), each group a
set of words that name the same thing in a tool's context. It is deliberately about the
*vocabulary*, not about any one tool set: a group never names a vendor or a tool.

Expansion words are scored apart from the query's own words and count for less
(`Weights.expansion`), so a query that already uses a tool's words is not diluted.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from agent.ext.tool_search.text import stem

__all__ = ["GROUPS", "expand"]

GROUPS: tuple[str, ...] = (
    # actions
    "search find look lookup locate query seek",
    "read open view show display see fetch get retrieve",
    "list enumerate browse all",
    "create make new add open file register start",
    "update edit change modify rename reschedule move set adjust",
    "delete remove erase drop clear purge trash destroy",
    "cancel abort revoke void",
    "send post share notify tell announce message deliver",
    "reply respond answer",
    "write save store record log persist put",
    "run execute invoke launch trigger perform",
    "stop halt shut pause suspend",
    "restart reboot bounce reset",
    "approve accept confirm grant",
    "decline reject refuse deny",
    "copy duplicate clone fork",
    "upload push publish attach",
    "download pull export save",
    "refund reimburse repay money back chargeback",
    "pay charge bill payment invoice",
    "track trace locate where status",
    "schedule book plan arrange calendar",
    "count many number total how",
    # objects
    "issue bug ticket defect problem incident task",
    "directory folder dir",
    "file document doc attachment",
    "event meeting appointment invite invitation call",
    "message chat text note post dm",
    "email mail inbox e-mail",
    "contact person customer client lead",
    "company account organization organisation business",
    "deal opportunity sale",
    "order purchase",
    "shipment package parcel delivery shipping",
    "product item sku stock inventory",
    "coupon discount promo promotion code voucher",
    "subscription plan tier",
    "repository repo project codebase",
    "branch ref",
    "commit change revision",
    "release tag version",
    "pipeline build workflow job ci",
    "log logs output trace",
    "error exception crash failure fault",
    "metric metrics statistics stats graph chart",
    "database db table sql",
    "cache key redis",
    "instance server vm machine host node",
    "container pod docker",
    "deployment service app",
    "bucket storage blob object",
    "spreadsheet sheet table rows",
    "page wiki article doc",
    "user member employee person people",
    "employee staff worker",
    "vacation leave time off holiday pto",
    "expense receipt reimbursement",
    "url link address website site web page",
    "screenshot capture image picture",
    "weather forecast rain snow sun temperature wind",
    "time clock hour date now",
    "directions route travel drive walk transit train bus",
    "phone mobile sms text",
    "translate translation language",
    "price quote cost",
    "visitor visitors user traffic session",
    "experiment test variant ab",
    "funnel conversion",
    "report analytics",
    "oncall on-call pager duty",
    "outage incident downtime degraded",
    # added on the real MCP tools' tuning half (benchmarks/tool_search.py --real)
    "pr pull",
    "dialog popup alert modal prompt",
    "type enter input fill",
    "remember memory knowledge fact observation",
    "far distance",
)


@functools.cache
def _by_word() -> dict[str, frozenset[str]]:
    """Stem -> the stems of its groups, built on first use (stemming loads the extra)."""
    table: dict[str, frozenset[str]] = {}
    for group in GROUPS:
        stems = frozenset(stem(w) for w in group.split())
        for s in stems:
            table[s] = table.get(s, frozenset()) | stems
    return table


def expand(terms: Iterable[str]) -> list[str]:
    """The stemmed words the thesaurus adds to stemmed query `terms` (none already there)."""
    given = set(terms)
    added: list[str] = []
    for term in given:
        for other in sorted(_by_word().get(term, ())):
            if other not in given and other not in added:
                added.append(other)
    return added
