"""A graph of tools that work on the same things, for expanding a keyword search.

A task rarely needs one tool: cancelling an order and refunding it takes
`shop_cancel_order` and `shop_process_refund`, and a query that names only the first
should still bring the second. Tools that handle the same resource are linked, read from
what their declarations already say (no hand-made relations):

* a shared *identifying parameter* (`order_id`, `issue_number`, `pod`, `event_id`): the
  output of one is the input of the other, the strongest link;
* a shared *resource word* in their names once the action verbs are removed, qualified
  by the name's first word, the family (`calendar_create_event` and
  `calendar_update_event` both handle `calendar event`; `jira_create_issue` and
  `github_create_issue` do not share `issue`).

Parameters every family has (`limit`, `query`, `name`, `path`...) link nothing: they say
how a tool is called, not what it works on. Likewise a word that names a whole vendor
family (`github`, `slack`) only qualifies the resource words, or every GitHub tool would
neighbour every other; and a key shared by a crowd links nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from agent.ext.tool_search.text import split_identifier, stem, wordset

__all__ = ["ToolGraph"]

ACTIONS = wordset(
    """get list create update delete add remove set search find read write send post run query
    fetch start stop restart cancel close open make describe show put edit move copy upload
    download invoke apply scale retry rerun resolve acknowledge complete approve request submit
    convert log assign transition change execute export import generate evaluate place track
    process schedule pin reply forward respond mute ban invite share append insert merge fork
    star detect translate shorten"""
)
"""Verbs that say what a tool does, not what it works on."""

GENERIC_PARAMS = wordset(
    """query limit name path title body text description content message id type status state
    start end from_time to_time since before after page cursor format region namespace notes
    kind tags comment reason project fields filter sorts values rows items"""
)
"""Parameters that describe the call, shared across unrelated tools."""

PARAM_LINK = 1.0
RESOURCE_LINK = 0.5


class ToolGraph:
    """Weighted links between tools that share an identifying parameter or a resource word."""

    def __init__(self, declarations: Sequence[Mapping[str, Any]]) -> None:
        self.names = [str(d["name"]) for d in declarations]
        params = {str(d["name"]): _params(d) for d in declarations}
        resources = {str(d["name"]): _resource_words(str(d["name"])) for d in declarations}
        self.links: dict[str, dict[str, float]] = defaultdict(dict)
        self._link_by(params, PARAM_LINK)
        self._link_by(resources, RESOURCE_LINK)

    def _link_by(self, keys: Mapping[str, frozenset[str]], weight: float) -> None:
        holders: dict[str, list[str]] = defaultdict(list)
        for name, found in keys.items():
            for key in found:
                holders[key].append(name)
        crowd = max(8, len(self.names) // 10)  # a key half the registry shares identifies nothing
        for members in holders.values():
            if len(members) < 2 or len(members) > crowd:
                continue
            for a in members:
                for b in members:
                    if a != b:
                        self.links[a][b] = max(self.links[a].get(b, 0.0), weight)

    def expand(self, seeds: Mapping[str, float]) -> dict[str, float]:
        """Neighbours of the seed tools, each scored by the seeds' strength times the link
        weight (summed over seeds), seeds included with their own strength."""
        scores: dict[str, float] = {}
        for seed, strength in seeds.items():
            scores[seed] = scores.get(seed, 0.0) + strength
            for neighbour, weight in self.links.get(seed, {}).items():
                scores[neighbour] = scores.get(neighbour, 0.0) + strength * weight
        return scores


def _params(declaration: Mapping[str, Any]) -> frozenset[str]:
    schema = declaration.get("input_schema")
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return frozenset()
    return frozenset(str(p).lower() for p in props if str(p).lower() not in GENERIC_PARAMS)


def _resource_words(name: str) -> frozenset[str]:
    """`github_add_issue_comment` -> {'github issu', 'github comment'}: the things it works on,
    qualified by its family so GitHub issues and Jira issues stay apart."""
    parts = split_identifier(name)
    family, rest = parts[0], parts[1:]
    return frozenset(f"{family} {stem(p)}" for p in rest if p not in ACTIONS)
