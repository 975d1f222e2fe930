"""The fallback compressor: one test per detector, checking the facts each kind is read for."""

from __future__ import annotations

import json
import traceback
from typing import Any

import pytest

from agent.context.artifacts import find_pointer
from agent.context.compress import compress, detect

NAME = "tool-0123456789ab.txt"
BUDGET = 1000


def strict_json(text: str) -> object:
    def reject(constant: str) -> object:
        raise ValueError(constant)

    return json.loads(text, parse_constant=reject)


def orders(n: int, odd: int) -> list[dict[str, object]]:
    return [
        {
            "order_id": f"2026-{i:04d}",
            "status": "refunded" if i == odd else ("delivered" if i % 3 else "shipped"),
            "customer": {"id": f"u{i}", "name": "Lee Sujin", "tier": "GOLD"},
            "items": [{"sku": "EAR-1", "price": 89000, "qty": 1}],
            "memo": "Leave at the door. " * 5,
            **({"refund_reason": "broken"} if i == odd else {}),
        }
        for i in range(n)
    ]


# -- JSON --------------------------------------------------------------------------------


def test_a_json_list_becomes_a_summary_that_is_still_json() -> None:
    data = orders(60, odd=31)
    out = compress(data, BUDGET, pointer=NAME)
    summary = strict_json(out)
    assert detect(data) == "json" and len(out) <= BUDGET
    assert isinstance(summary, dict) and summary["total"] == 60
    assert "2026-0000" in out and "2026-0059" in out, "first and last ids"
    assert summary["values"]["status"]["refunded"] == 1, "the rare status is counted"
    assert "refund_reason" in summary["other_fields"], "a field only a middle item has"
    assert find_pointer(out) == NAME


def test_json_text_is_parsed_and_the_output_is_json_too() -> None:
    text = json.dumps(orders(40, odd=3), indent=2)
    out = compress(text, BUDGET, pointer=NAME)
    assert detect(text) == "json" and len(out) <= BUDGET
    assert strict_json(out)["total"] == 40


def test_a_big_dict_is_slimmed_by_depth_and_length_and_stays_json() -> None:
    schema = {
        "$defs": {
            f"Model{i}": {"properties": {f"field_{j}": {"type": "string"} for j in range(12)}}
            for i in range(40)
        },
        "properties": {"id": {"type": "string"}, "usage": {"$ref": "#/$defs/Model3"}},
        "title": "Message",
    }
    out = compress(schema, BUDGET, pointer=NAME)
    parsed = strict_json(out)
    assert len(out) <= BUDGET and isinstance(parsed, dict)
    assert parsed["title"] == "Message"
    assert "Model0" in out and "Model39" in out, "first and last definition names survive"
    assert "_cut" in parsed and find_pointer(out) == NAME


def test_an_error_dict_keeps_its_message_even_when_keys_are_cut() -> None:
    error = {f"k{i}": "v" * 50 for i in range(80)}
    error["message"] = "card declined"
    out = compress(error, 500, pointer=NAME)
    assert "card declined" in out and len(out) <= 500


def test_http_responses_keep_status_body_and_actionable_headers_only() -> None:
    response = {
        "status": 200,
        "headers": {
            "Link": '<https://api.example.com/items?page=3>; rel="next"',
            "X-RateLimit-Remaining": "41",
            "Retry-After": "30",
            **{f"X-Trace-{i}": "t" * 40 for i in range(10)},
            "Set-Cookie": "session=secret",
        },
        "body": json.dumps({"data": orders(30, odd=7), "next_cursor": "c-123"}),
    }
    out = compress(response, BUDGET, pointer=NAME)
    parsed = strict_json(out)
    assert detect(response) == "http" and len(out) <= BUDGET
    assert parsed["status"] == 200
    assert parsed["headers"] == {
        "Link": '<https://api.example.com/items?page=3>; rel="next"',
        "X-RateLimit-Remaining": "41",
        "Retry-After": "30",
    }
    assert "c-123" in out and "11 headers" in parsed["_cut"]


def test_a_result_that_fits_comes_back_unchanged() -> None:
    assert compress("short", BUDGET) == "short"
    assert compress({"a": [1, 2]}, BUDGET) == '{"a":[1,2]}'


# -- HTML --------------------------------------------------------------------------------

PAGE = (
    """<!DOCTYPE html><html><head><title>Shop API &mdash; Guide</title>
<style>.x{color:red}</style><script>var secret = "tracking";</script></head><body>
<nav><a href="/">Home</a> <a href="/about">About us nav link</a></nav>
<h1>Shop API</h1><p>Welcome to the guide.</p>
"""
    + "".join(
        f"<h2>Section {i}</h2><p>{'Body text of the section. ' * 20}</p><ul><li>point</li></ul>"
        for i in range(30)
    )
    + "<footer>Copyright footer</footer></body></html>"
)


def test_html_becomes_text_with_headings_and_without_boilerplate() -> None:
    out = compress(PAGE, BUDGET, pointer=NAME)
    assert detect(PAGE) == "html" and len(out) <= BUDGET
    assert "Shop API — Guide" in out, "title, entities decoded"
    assert "# Shop API" in out and "## Section 0" in out and "## Section 29" in out
    assert "tracking" not in out and "About us nav link" not in out and "Copyright footer" not in out
    assert "<" not in out.replace("<" + NAME, ""), "no tags left"
    assert find_pointer(out) == NAME


def test_an_html_error_page_is_one_line() -> None:
    page = (
        "<html><head><title>404 Not Found</title><style>" + "b{x:y}" * 400 + "</style></head>"
        "<body><h1>Not Found</h1><p>The requested URL was not found on this server.</p></body></html>"
    )
    out = compress(page, BUDGET, pointer=NAME)
    assert out.startswith("HTML error page: 404 Not Found") and "\n" not in out
    assert "requested URL was not found" in out


# -- tracebacks and test runs -------------------------------------------------------------


def _chained_traceback() -> str:
    def parse(raw: str) -> object:
        return json.loads(raw)

    def load_settings(raw: str) -> object:
        try:
            return parse(raw)
        except ValueError as error:
            raise RuntimeError("cannot load settings") from error

    try:
        load_settings("{bad json")
    except RuntimeError:
        return traceback.format_exc()
    raise AssertionError("no exception")


def test_a_traceback_keeps_every_exception_line_and_the_user_frames() -> None:
    text = "\n".join(["some output before"] * 40) + "\n" + _chained_traceback()
    out = compress(text, 800, pointer=NAME)
    assert detect(text) == "traceback" and len(out) <= 800
    assert "json.decoder.JSONDecodeError: Expecting property name" in out, "the root cause"
    assert "RuntimeError: cannot load settings" in out, "the final exception"
    assert "in load_settings" in out and "in parse" in out, "user frames"
    assert "direct cause" in out
    assert 'json/decoder.py", line' not in out or "raw_decode" in out, (
        "library frames cut except the raise site"
    )
    assert find_pointer(out) == NAME


PYTEST = "\n".join(
    [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0",
        "collected 42 items",
        "",
        *[f"tests/test_cart.py::test_price_{i} PASSED{' ' * 40}[{i:3d}%]" for i in range(38)],
        "tests/test_cart.py::test_refund_total FAILED                          [ 95%]",
        "tests/test_cart.py::test_orders_query ERROR                           [ 97%]",
        "",
        "==================================== ERRORS ====================================",
        "_____________________ ERROR at setup of test_orders_query ______________________",
        "    @pytest.fixture",
        "    def db():",
        ">       raise ConnectionError('database unreachable')",
        "E       ConnectionError: database unreachable",
        "",
        "tests/test_cart.py:40: ConnectionError",
        "=================================== FAILURES ===================================",
        "______________________________ test_refund_total _______________________________",
        "",
        "    def test_refund_total():",
        "        items = [100, 250]",
        ">       assert sum(items) == 360",
        "E       assert 350 == 360",
        "E        +  where 350 = sum([100, 250])",
        "",
        "tests/test_cart.py:12: AssertionError",
        "=========================== short test summary info ============================",
        "FAILED tests/test_cart.py::test_refund_total - assert 350 == 360",
        "ERROR tests/test_cart.py::test_orders_query - ConnectionError: database unreachable",
        "============== 1 failed, 38 passed, 2 skipped, 1 error in 0.75s ===============",
    ]
)


def test_test_output_keeps_counts_failures_and_first_error_lines() -> None:
    out = compress(PYTEST, BUDGET, pointer=NAME)
    assert detect(PYTEST) == "tests" and len(out) <= BUDGET
    assert "1 failed, 38 passed, 2 skipped, 1 error" in out and "collected 42 items" in out
    assert "FAILED tests/test_cart.py::test_refund_total - assert 350 == 360" in out
    assert "E       assert 350 == 360" in out and "E       ConnectionError: database unreachable" in out
    assert "+  where" not in out, "only the first E line of each failure"
    assert "test_price_5 PASSED" not in out
    assert find_pointer(out) == NAME


# -- logs, git, tables, source, paths, plain text -----------------------------------------


def test_a_log_keeps_errors_and_warnings_with_line_numbers_and_folds_repeats() -> None:
    lines = [f"2026-08-01 10:00:{i % 60:02d},000 INFO GET /orders/{i} 200 {i % 90}ms" for i in range(3000)]
    lines[1500] = "2026-08-01 10:25:00,000 ERROR charge failed for order 1500: card declined"
    lines[2200] = "2026-08-01 10:36:40,000 WARNING slow query: 2400 ms"
    lines[2300] = "2026-08-01 10:38:20,000 WARNING slow query: 3100 ms"
    lines[-1] = "2026-08-01 11:00:00,000 INFO shutdown complete"
    text = "\n".join(lines)
    out = compress(text, BUDGET, pointer=NAME)
    assert detect(text) == "log" and len(out) <= BUDGET
    assert "L1501 2026-08-01 10:25:00,000 ERROR charge failed for order 1500: card declined" in out
    assert "L2201" in out and "slow query" in out and "[x2 similar, last L2301]" in out
    assert "ERROR 1, WARNING 2, INFO 2997" in out
    assert "shutdown complete" in out and find_pointer(out) == NAME


def test_a_log_of_few_kinds_of_line_gets_a_short_view_whatever_the_budget() -> None:
    ops, regions = ("pay", "hold", "quote"), ("eu-west-1", "us-east-1", "ap-northeast-2")
    lines = [
        f"2026-08-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z INFO  api-{i % 6} req-{i * 7919:012x} "
        f"POST /v1/{ops[i % 3]} status=200 duration_ms={i % 240} region={regions[i // 3 % 3]}"
        for i in range(900)
    ]
    lines[450] = "2026-08-01T10:07:30.000Z ERROR api-2 req-0000000001c2 PoolTimeout: pool exhausted (size=20)"
    text = "\n".join(lines)
    short, long = compress(text, 2000, pointer=NAME), compress(text, 8000, pointer=NAME)
    assert short == long and len(short) < 1200
    assert "L451 " in short and "PoolTimeout: pool exhausted (size=20)" in short
    assert "ERROR 1, INFO 899" in short and find_pointer(short) == NAME
    assert lines[0] in short and lines[-1] in short


def test_git_log_is_one_line_per_commit() -> None:
    commits = []
    for i in range(80):
        merge = "Merge: abc def\n" if i == 40 else ""
        subject = "Merge branch 'refunds'" if i == 40 else f"Fix edge case {i}"
        commits.append(
            f"commit {i:02x}{'a' * 38}\n{merge}Author: Ada Lovelace <ada@example.com>\n"
            f"Date:   Mon Jun 1 10:00:00 2026 +0000\n\n    {subject}\n\n    Longer body {i}.\n"
        )
    text = "\n".join(commits)
    out = compress(text, BUDGET, pointer=NAME)
    assert detect(text) == "git_log" and len(out) <= BUDGET
    assert f"00{'a' * 38} 2026-06-01 Ada Lovelace: Fix edge case 0" in out, "hashes never shortened"
    assert "4faaaaaaaa" in out and "Merge branch 'refunds'" in out
    assert "80 commits" in out and "Longer body" not in out


def test_a_table_keeps_header_ends_and_odd_rows() -> None:
    rows = [f"pkg-{i:03d}{' ' * 20}1.{i}.0{' ' * 10}/site-packages" for i in range(120)]
    rows[60] = f"agent-from-scratch{' ' * 10}0.1.0{' ' * 5}/work/main{' ' * 5}/site-packages"
    text = "\n".join([f"Package{' ' * 20}Version{' ' * 10}Location", "-" * 60, *rows])
    out = compress(text, BUDGET, pointer=NAME)
    assert detect(text) == "table" and len(out) <= BUDGET
    assert out.startswith("Package") and "pkg-000" in out and "pkg-119" in out
    assert "/work/main" in out, "the row with an extra column"
    assert "120 rows" in out and rows[0] in out and rows[-1] in out, "rows verbatim, counted"


def test_source_is_an_outline_with_numbered_definitions() -> None:
    body = ['"""Module docstring."""', "import json", ""]
    for i in range(30):
        body += [f"def function_{i}(x):", *[f"    y = x + {j}" for j in range(12)], "    return y", ""]
    text = "\n".join(body)
    out = compress(text, BUDGET, pointer=NAME)
    assert detect(text) == "source" and len(out) <= BUDGET
    assert out.startswith('"""Module docstring."""\nimport json\n'), "the first lines verbatim"
    assert "L19 def function_1(x):" in out and "L439 def function_29(x):" in out, "numbered, for start_line="
    assert "y = x + 5" not in out, "bodies cut before definitions"
    assert out.split("\n[source")[0].endswith("    y = x + 11\n    return y"), "the last lines verbatim"


def test_path_listings_become_a_folder_tree_with_counts() -> None:
    paths = [f"pkg/types/beta/m{i}.py" for i in range(300)] + [f"pkg/lib/f{i}.py" for i in range(200)]
    text = "Name: pkg\nFiles:\n" + "\n".join(f"  {p}" for p in paths)
    out = compress(text, BUDGET, pointer=NAME)
    assert detect(text) == "paths" and len(out) <= BUDGET
    assert "Name: pkg" in out and "pkg/types/beta/ (300)" in out and "pkg/lib/ (200)" in out
    assert "pkg/lib/f199.py" in out and "500 paths" in out


def test_plain_text_keeps_head_and_tail_and_says_what_it_cut() -> None:
    text = "\n".join(f"line {i}: {'words ' * 8}" for i in range(400))
    out = compress(text, BUDGET, pointer=NAME)
    assert detect(text) == "text" and len(out) <= BUDGET
    assert out.startswith("line 0:") and "line 399:" in out
    assert "[... " in out and "400 lines" in out and find_pointer(out) == NAME


def test_plain_text_shows_recurring_boilerplate_once() -> None:
    blocks = [f"field_{i}\n  Input should be valid\n    See https://errors.example/v/{i}" for i in range(40)]
    out = compress("\n".join(blocks), BUDGET, pointer=NAME)
    assert out.count("See https://errors.example/") <= 2
    assert "field_0" in out and "field_39" in out


def test_the_budget_guard_catches_a_compressor_that_overshoots(monkeypatch: pytest.MonkeyPatch) -> None:
    import agent.context.compress as dispatcher

    monkeypatch.setitem(dispatcher._TEXT, "text", lambda text, budget, pointer: text * 3)
    out = compress("\n".join(f"row {i}" for i in range(2000)), 500, pointer=NAME)
    assert len(out) <= 500 and find_pointer(out) == NAME


def test_a_compressor_bug_degrades_to_a_plain_cut_instead_of_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    import agent.context.compress as dispatcher

    def broken(text: str, budget: int, pointer: str | None) -> str:
        raise RuntimeError("bug")

    monkeypatch.setitem(dispatcher._TEXT, "text", broken)
    out = compress("\n".join(f"row {i}" for i in range(2000)), 500, pointer=NAME)
    assert len(out) <= 500 and out.startswith("row 0") and find_pointer(out) == NAME


def test_without_a_pointer_a_cut_says_the_full_result_was_not_kept() -> None:
    out = compress("\n".join(f"row {i}" for i in range(2000)), 300)
    assert "full result not kept" in out and find_pointer(out) is None


@pytest.mark.parametrize("budget", [1, 50, 199])
def test_budgets_below_the_floor_are_raised_to_it(budget: int) -> None:
    assert len(compress("x\n" * 5000, budget)) <= 200


# -- the new kinds and general rules (issue 16) -------------------------------------------


def _diff(files: int) -> str:
    parts = [
        f"commit {'c0ffee' * 6}abcd\nAuthor: A <a@example.com>\n"
        "Date:   Mon Jun 1 10:00:00 2026\n\n    Subject line\n"
    ]
    for f in range(files):
        parts.append(
            f"diff --git a/pkg/mod_{f}.py b/pkg/mod_{f}.py\nindex 1111111..2222222 100644\n"
            f"--- a/pkg/mod_{f}.py\n+++ b/pkg/mod_{f}.py\n"
        )
        for h in range(3):
            parts.append(
                f"@@ -{10 * h + 1},6 +{10 * h + 1},7 @@ def f_{h}():\n"
                + "     context\n" * 3
                + f"-    old_{f}_{h}\n+    new_{f}_{h}\n+    added\n"
                + "     context\n" * 3
            )
    return "".join(parts)


def test_a_diff_keeps_every_file_with_counts_the_hunk_heads_and_the_full_hash() -> None:
    text = _diff(8)
    out = compress(text, BUDGET, pointer=NAME)
    assert detect(text) == "diff" and len(out) <= BUDGET
    assert f"commit {'c0ffee' * 6}abcd" in out and "Subject line" in out
    assert all(f"diff --git a/pkg/mod_{f}.py b/pkg/mod_{f}.py  (+6 -3)" in out for f in range(8))
    assert "8 files changed, 24 hunks, +48 -24 lines" in out and find_pointer(out) == NAME
    assert "@@ -21,6 +21,7 @@" in out, "the last hunk header"


def test_an_error_line_among_thousands_survives_with_the_line_that_says_where() -> None:
    lines = [f"Compiling '/src/pkg/module_{i:04d}.py'..." for i in range(3000)]
    lines[1717:1718] = [
        "Compiling '/src/pkg/broken.py'...",
        '***   File "/src/pkg/broken.py", line 9',
        "    def f(:",
        "SyntaxError: invalid syntax",
    ]
    lines[40] = "Compiling '/src/pkg/errors.py'..."  # a file name is not an error
    out = compress("\n".join(lines), BUDGET, pointer=NAME)
    assert "SyntaxError: invalid syntax" in out and '"/src/pkg/broken.py", line 9' in out
    assert "(3,000 start with `Compiling`)" in out, "the items of a cut text counted, not only its lines"


def test_ndjson_keeps_records_verbatim_with_the_error_record_and_the_count() -> None:
    rows = [json.dumps({"id": i, "level": "INFO", "msg": f"ok {i}"}) for i in range(2000)]
    rows[1234] = json.dumps({"id": 1234, "level": "ERROR", "msg": "disk full on /dev/sdb1"})
    out = compress("\n".join(rows), BUDGET, pointer=NAME)
    assert detect("\n".join(rows)) == "ndjson"
    assert rows[0] in out and rows[-1] in out and rows[1234] in out and "2000 records" in out


def test_csv_and_xml_count_their_rows_and_items() -> None:
    csv_text = "id,name,size\n" + "".join(f"{i},pkg-{i},{i * 7}\n" for i in range(3000))
    out = compress(csv_text, BUDGET, pointer=NAME)
    assert detect(csv_text) == "csv" and "3000 rows x 3 columns" in out and "2999,pkg-2999,20993" in out
    xml = (
        "<?xml version='1.0'?>\n<!-- a long comment -->\n<items>\n"
        + "".join(f'  <item id="{i}" sha="{i:040x}"/>\n' for i in range(900))
        + "</items>\n"
    )
    out = compress(xml, BUDGET, pointer=NAME)
    assert detect(xml) == "xml" and "900 items under <items>" in out and f'sha="{899:040x}"' in out


def test_long_json_keeps_its_first_and_last_keys_and_counts_the_rest() -> None:
    data = {f"KEY_{i:04d}": f"value {i}" for i in range(1500)}
    out = compress(json.dumps(data), BUDGET, pointer=NAME)
    parsed = strict_json(out)
    assert isinstance(parsed, dict) and "KEY_0000" in parsed and "KEY_1499" in parsed
    assert "of 1500 keys" in out


def test_other_languages_stack_traces_keep_exceptions_causes_and_user_frames() -> None:
    frames = "".join(f"\tat java.base/java.util.Lib{i}.call(Lib{i}.java:{i})\n" for i in range(200))
    text = (
        'Exception in thread "main" java.lang.IllegalStateException: bad config value: 12x\n'
        "\tat com.acme.Main.load(Main.java:4)\n"
        + frames
        + 'Caused by: java.lang.NumberFormatException: For input string: "12x"\n'
        "\tat com.acme.Main.parse(Main.java:2)\n" + frames + "\t... 41 more\n"
    )
    out = compress(text, BUDGET, pointer=NAME)
    assert detect(text) == "trace" and len(out) <= BUDGET
    for kept in (
        "IllegalStateException: bad config value: 12x",
        "Caused by: java.lang.NumberFormatException",
        "com.acme.Main.load(Main.java:4)",
        "com.acme.Main.parse(Main.java:2)",
        "... 41 more",
    ):
        assert kept in out


def test_text_that_looks_like_the_binary_marker_is_still_text() -> None:
    """Binary data is told apart by its type, not by a marker string a text could also hold."""
    assert compress("\x00binary", BUDGET, pointer=NAME) == "\x00binary"
    assert detect("\x00binary 12 bytes") != "binary"
    described = compress(b"\x00\x01" * 5000, BUDGET, pointer=NAME)
    assert described.startswith("[binary data, 10,000 bytes;") and find_pointer(described) == NAME


@pytest.mark.parametrize("failure", ["raises", "invalid JSON"])
def test_json_in_is_json_out_even_when_a_rule_breaks(monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    """A structured result always comes back as strict JSON: a rule that raises or renders a raw
    control character (found once by hypothesis on a dict with a 4,300-digit int) gives a JSON note."""
    import agent.context.compressors.structured as module

    def broken(data: Any, budget: int, pointer: str | None) -> str:
        if failure == "raises":
            raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")
        return '{"key": "a\x0bb"}'

    monkeypatch.setattr(module, "compress_structured", broken)
    out = compress({"rows": list(range(2000))}, BUDGET, pointer=NAME)
    parsed = json.loads(out)
    assert "_cut" in parsed and find_pointer(out) == NAME and len(out) <= BUDGET


def test_compressing_one_kind_loads_only_that_kind_s_compressor() -> None:
    """A run whose results are logs never imports the HTML, diff or JSON compressors."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from agent.context.compress import compress\n"
        "line = '2026-11-30T10:{:02d}:00 INFO worker {} handled request'\n"
        "log = '\\n'.join(line.format(i % 60, i) for i in range(400))\n"
        "compress(log, 800)\n"
        "kinds = [m for m in sys.modules if m.startswith('agent.context.compressors.')]\n"
        "print(sorted(m.rsplit('.', 1)[1] for m in kinds))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout.strip().replace("'", '"'))
    assert "logs" in loaded
    assert not {"html", "diff", "structured", "records", "traces", "testrun", "pytraceback"} & set(loaded)
