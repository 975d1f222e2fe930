"""Per-tool field whitelists: dicts keep the listed (dotted) paths, lists keep top N + total."""

from __future__ import annotations

import copy
import json

import pytest

from agent.context.artifacts import find_pointer
from agent.context.slim import parse_paths, slim

ORDER = {
    "order_id": "A-1",
    "status": "delivered",
    "price": 89000,
    "customer": {"id": "u1", "name": "Lee", "grade": "GOLD"},
    "items": [{"sku": "EAR-1", "name": "earphones", "qty": 1}, {"sku": "CBL-1", "name": "cable", "qty": 2}],
    "payment": {"method": "CARD"},
    "memo": "x" * 300,
}


def test_a_dict_keeps_only_the_listed_fields_in_the_listed_order() -> None:
    out = slim(ORDER, ["status", "order_id"])
    assert list(out) == ["status", "order_id", "_cut"]
    assert out["status"] == "delivered" and out["order_id"] == "A-1"
    assert "5 other fields" in out["_cut"]


def test_a_dotted_path_keeps_the_nested_field_and_the_structure_around_it() -> None:
    out = slim(ORDER, ["order_id", "customer.name"])
    assert out["customer"] == {"name": "Lee"}


def test_a_path_through_a_list_applies_to_every_item() -> None:
    out = slim(ORDER, ["items.sku"])
    assert out["items"] == [{"sku": "EAR-1"}, {"sku": "CBL-1"}]


def test_a_list_keeps_the_top_n_items_the_total_and_a_pointer() -> None:
    orders = [{**ORDER, "order_id": f"A-{i}"} for i in range(12)]
    out = slim(orders, ["order_id", "price"], top_n=5, pointer="search_orders-0123456789ab.json")
    assert [o["order_id"] for o in out["items"]] == [f"A-{i}" for i in range(5)]
    assert out["total"] == 12
    assert "7 more items" in out["_cut"]
    assert find_pointer(json.dumps(out)) == "search_orders-0123456789ab.json"


def test_top_n_applies_to_lists_nested_in_the_kept_structure() -> None:
    value = {"orders": [{"id": i} for i in range(9)], "next": "c2"}
    out = slim(value, ["orders.id", "next"], top_n=3)
    assert out["orders"] == [{"id": 0}, {"id": 1}, {"id": 2}, "... +6 more"]
    assert out["next"] == "c2" and "6 nested items" in out["_cut"]


def test_nothing_is_noted_when_nothing_was_cut() -> None:
    assert slim({"a": 1, "b": 2}, ["a", "b"]) == {"a": 1, "b": 2}


def test_a_whitelist_that_matches_nothing_returns_none_so_the_caller_falls_back() -> None:
    assert slim({"error": "not found"}, ["order_id"]) is None
    assert slim([{"x": 1}], ["order_id"]) is None
    assert slim("plain text", ["order_id"]) is None


def test_the_input_is_never_mutated() -> None:
    before = copy.deepcopy(ORDER)
    slim([ORDER] * 7, ["customer.name", "items.sku"], top_n=2)
    assert before == ORDER


def test_pydantic_models_and_dataclasses_are_opened() -> None:
    from dataclasses import dataclass

    from pydantic import BaseModel

    class Model(BaseModel):
        order_id: str
        secret: str

    @dataclass
    class Record:
        order_id: str
        secret: str

    assert slim(Model(order_id="M", secret="s"), ["order_id"])["order_id"] == "M"
    assert slim([Record("R", "s")], ["order_id"])["items"] == [{"order_id": "R"}]


def test_bad_paths_are_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="empty segment"):
        parse_paths(["customer..name"])
    assert parse_paths(["a", "b.c", "b.d"]) == {"a": {}, "b": {"c": {}, "d": {}}}
