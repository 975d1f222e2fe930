"""The corpus of `benchmarks/compress.py`: real outputs of this machine, with must-keep facts.

Every builder runs a real command or library call (or serves a real HTTP response
on loopback) and derives the facts from the data it got, before any compressor
sees it. A builder whose source is missing here is skipped with a note on stderr.
"""

from __future__ import annotations

import html
import html.parser
import http.server
import json
import logging
import math
import random
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

FactSpec = tuple[str, str, str]
"""(text, position in the input, kind: text | count | loose (whitespace-insensitive))"""
Entry = tuple[str, Any, list[FactSpec]]


def _run(*command: str, cwd: Path | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=120)
    return done.stdout + done.stderr


def _facts(text: str, wanted: list[str], counts: tuple[int, ...] = ()) -> list[FactSpec]:
    """Facts with their position in `text` (head < 20% < middle < 80% < tail)."""
    out: list[FactSpec] = []
    for fact in wanted:
        at = text.find(fact)
        if at < 0:
            raise AssertionError(f"fact {fact!r} is not in the input")
        share = at / max(len(text), 1)
        out.append((fact, "head" if share < 0.2 else "tail" if share > 0.8 else "middle", "text"))
    return out + [(str(n), "count", "count") for n in counts]


# -- system command output ----------------------------------------------------------


def pip_list(_: Path) -> Entry:
    text = _run(sys.executable, "-m", "pip", "list", "-v", "--disable-pip-version-check")
    rows = [line.split() for line in text.splitlines()[2:] if line.strip()]
    wanted = ["Package", rows[0][0], rows[-1][0]]
    editable = [r for r in rows if len(r) == 5]
    wanted += [editable[0][2]] if editable else []
    return "pip_list", text, _facts(text, wanted, (len(rows),))


def pip_show_files(_: Path) -> Entry:
    text = _run(sys.executable, "-m", "pip", "show", "-f", "anthropic", "--disable-pip-version-check")
    lines = text.splitlines()
    files = [line.strip() for line in lines[lines.index("Files:") + 1 :] if line.strip()]
    middle_folder = files[len(files) // 2].rsplit("/", 1)[0]
    version = next(line for line in lines if line.startswith("Version:"))
    return (
        "pip_show_files",
        text,
        _facts(text, ["Name: anthropic", version, middle_folder, files[-1]], (len(files),)),
    )


def pip_list_json(_: Path) -> Entry:
    text = _run(sys.executable, "-m", "pip", "list", "--format=json", "--disable-pip-version-check")
    data = json.loads(text)
    wanted = [data[0]["name"], data[len(data) // 2]["name"], data[-1]["name"]]
    wanted += ["editable_project_location"] if any("editable_project_location" in d for d in data) else []
    return "pip_list_json", text, _facts(text, wanted, (len(data),))


def ps_aux(_: Path) -> Entry:
    text = _run("ps", "aux")
    rows = [line.split(None, 10) for line in text.splitlines()[1:] if line.strip()]
    wanted = ["COMMAND", rows[0][10].split()[0], rows[-1][10].split()[0]]
    return "ps_aux", text, _facts(text, wanted, (len(rows),))


def ls_la(_: Path) -> Entry:
    folder = "/usr/lib" if Path("/usr/lib").is_dir() else sys.prefix
    text = _run("ls", "-la", folder)
    lines = text.splitlines()
    entries = [line.split(None, 8)[-1] for line in lines[1:]]
    wanted = [lines[0], entries[2], entries[-1]]
    links = [e for e in entries if " -> " in e]
    wanted += [links[len(links) // 2]] if links else []
    return "ls_la_usr_lib", text, _facts(text, wanted, (len(entries),))


def git_log(folder: Path) -> Entry:
    repo = folder / "repo"
    repo.mkdir()
    git = (
        "git",
        "-c",
        "user.name=Ada Lovelace",
        "-c",
        "user.email=ada@example.com",
        "-c",
        "init.defaultBranch=main",
    )
    _run(*git, "init", "-q", cwd=repo)
    authors = [
        "Ada Lovelace <ada@example.com>",
        "Grace Hopper <grace@example.com>",
        "Alan Turing <alan@example.com>",
    ]
    topics = ["orders", "refunds", "payments", "shipping", "auth", "search", "cache", "logging"]
    for i in range(140):
        if i == 70:
            _run(*git, "checkout", "-q", "-b", "feature/refund-audit", cwd=repo)
        if i == 75:
            _run(*git, "checkout", "-q", "main", cwd=repo)
            _run(
                *git,
                "merge",
                "-q",
                "--no-ff",
                "-m",
                "Merge branch 'feature/refund-audit'",
                "feature/refund-audit",
                cwd=repo,
            )
        topic = topics[i % len(topics)]
        body = f"Fix {topic} edge case #{i}\n\nThe {topic} module mishandled case {i}; add a test."
        body += f"\n\nRefs: TICKET-{1000 + i}"
        date = f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}T10:{i % 60:02d}:00"
        _run(
            *git,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            body,
            f"--author={authors[i % 3]}",
            f"--date={date}",
            cwd=repo,
        )
    text = _run("git", "log", cwd=repo)
    hashes = [line.split()[1] for line in text.splitlines() if line.startswith("commit ")]
    wanted = [hashes[0][:10], "Merge branch 'feature/refund-audit'", hashes[-1][:10]]
    return [("git_log", text, _facts(text, wanted, (len(hashes),))), _issues(repo)]


def _issues(repo: Path) -> Entry:
    """The same commits as a GitHub-style issues API page (an HTTP-shaped list response)."""
    log = _run("git", "log", "--reverse", "--format=%H%x1f%an%x1f%aI%x1f%s%x1f%b%x1e", cwd=repo)
    issues = []
    for n, record in enumerate(r for r in log.split("\x1e") if r.strip()):
        sha, author, date, subject, body = record.strip("\n").split("\x1f")
        issues.append(
            {
                "id": 880_000 + n,
                "number": n + 1,
                "title": subject,
                "state": "open" if subject.startswith("Merge") else "closed",
                "user": {"login": author.split()[0].lower(), "id": 1000 + len(author), "type": "User"},
                "labels": [{"name": subject.split()[1], "color": "ededed"}],
                "comments": n % 4,
                "created_at": date,
                "closed_at": None if subject.startswith("Merge") else date,
                "body": body.strip(),
                "commit_id": sha,
                "html_url": f"https://github.example.com/acme/shop/issues/{n + 1}",
                "locked": False,
            }
        )
    value = {
        "status": 200,
        "headers": {
            "content-type": "application/json; charset=utf-8",
            "link": '<https://api.github.example.com/repos/acme/shop/issues?page=2>; rel="next"',
            "x-ratelimit-remaining": "4999",
            "x-github-request-id": "C0DE:1234:5678:9ABC",
            "etag": 'W/"7f3a9c0e1d2b"',
            "cache-control": "private, max-age=60, s-maxage=60",
            "vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
        },
        "body": issues,
    }
    text = json.dumps(value)
    wanted = [issues[0]["title"], '"open"', issues[-1]["title"], "issues?page=2"]
    return "http_issues_list", value, _facts(text, wanted, (len(issues),))


def dpkg_log(_: Path) -> Entry:
    text = Path("/var/log/dpkg.log").read_text(errors="replace")
    lines = text.splitlines()
    return "dpkg_log", text, _facts(text, [lines[0], lines[-1]], (len(lines),))


def source_file(_: Path) -> Entry:
    import json.decoder

    text = Path(json.decoder.__file__).read_text()
    wanted = [
        '"""Implementation of JSONDecoder',
        "class JSONDecodeError",
        "def py_scanstring",
        "def raw_decode",
    ]
    return "source_json_decoder", text, _facts(text, wanted, (len(text.splitlines()),))


# -- Python outputs -------------------------------------------------------------------


def _order(rng: random.Random, n: int, status: str | None = None) -> dict[str, Any]:
    item = rng.choice([("EAR-9921", "wireless earphones", 89000), ("KB-120", "mechanical keyboard", 129000)])
    return {
        "order_id": f"20260801-{n:04d}",
        "status": status or rng.choice(["delivered", "delivered", "shipped", "preparing"]),
        "customer": {"id": f"u_{88000 + n}", "name": rng.choice(["Lee Sujin", "Kim Minho", "Park Jiwoo"])},
        "items": [
            {"sku": item[0], "name": item[1], "price": item[2], "qty": 1, "category_path": ["audio", "it"]}
        ],
        "payment": {
            "method": "CARD",
            "issuer": "Shinhan",
            "installment": 0,
            "approved_at": "2026-08-01T14:02:00",
        },
        "shipping_history": [
            {"at": f"2026-08-0{d}T09:00:00", "code": c, "hub": "Dongtan1"}
            for d, c in ((2, "PICKED"), (3, "DELIVERED"))
        ],
        "total_price": item[2],
        "currency": "KRW",
        "coupon": None,
        "points_used": rng.randrange(0, 3000, 100),
        "gift_wrap": False,
        "created_at": "2026-08-01T13:58:12+09:00",
        "updated_at": "2026-08-03T18:20:00+09:00",
        "channel": rng.choice(["app", "web"]),
        "warehouse": "ICN-2",
        "memo": "Leave at the door. " * rng.randrange(1, 4),
    }


def orders_json_text(_: Path) -> Entry:
    rng = random.Random(7)
    orders = [_order(rng, n, "refunded" if n == 83 else None) for n in range(150)]
    text = json.dumps(orders, ensure_ascii=False, indent=2)
    return (
        "api_orders_json",
        text,
        _facts(text, [orders[0]["order_id"], "refunded", orders[-1]["order_id"]], (150,)),
    )


def message_schema(_: Path) -> Entry:
    from anthropic.types import Message

    schema = Message.model_json_schema()
    defs = list(schema["$defs"])
    text = json.dumps(schema)
    wanted = [defs[0], defs[len(defs) // 2], defs[-1], list(schema["properties"])[-1]]
    return "message_json_schema", schema, _facts(text, wanted)


def _bad_order_errors() -> tuple[str, list[dict[str, Any]]]:
    from pydantic import BaseModel, ValidationError

    class Item(BaseModel):
        sku: str
        price: int
        qty: int

    class Order(BaseModel):
        order_id: str
        customer_email: str
        total_price: int
        shipping_fee: int
        points_used: int
        gift_wrap: bool
        items: list[Item]
        channel: str
        warehouse_code: str

    bad = {
        "order_id": 12,
        "total_price": "a lot",
        "shipping_fee": -1.5,
        "points_used": "many",
        "gift_wrap": "maybe",
        "channel": None,
        "items": [{"sku": i, "price": "free", "qty": "one"} for i in range(4)],
    }
    try:
        Order.model_validate(bad)
    except ValidationError as error:
        return str(error), json.loads(error.json())
    raise AssertionError("validation passed")


def validation_text(_: Path) -> Entry:
    text, errors = _bad_order_errors()
    locs = [str(e["loc"][-1]) for e in errors]
    wanted = [text.splitlines()[0], locs[0], locs[len(locs) // 2], "warehouse_code"]
    return "validation_error_text", text, _facts(text, wanted, (len(errors),))


def validation_422(_: Path) -> Entry:
    _, errors = _bad_order_errors()
    value = {
        "status": 422,
        "headers": {"content-type": "application/json", "x-request-id": "req_7f3a9c", "server": "uvicorn"},
        "body": {"detail": errors},
    }
    text = json.dumps(value)
    wanted = ["422", "order_id", "shipping_fee", "warehouse_code"]
    return "http_422_validation", value, _facts(text, wanted, (len(errors),))


def traceback_chained(folder: Path) -> Entry:
    script = folder / "app.py"
    script.write_text(
        "import asyncio, json, concurrent.futures\n\n"
        "class ConfigError(Exception):\n    pass\n\n"
        "def parse_settings(raw):\n    return json.loads(raw)\n\n"
        "def load_settings(path):\n    try:\n        return parse_settings(open(path).read())\n"
        "    except ValueError as err:\n"
        "        raise ConfigError(f'cannot load settings from {path}') from err\n\n"
        "async def start_worker(path):\n    loop = asyncio.get_running_loop()\n"
        "    with concurrent.futures.ThreadPoolExecutor() as pool:\n"
        "        return await loop.run_in_executor(pool, load_settings, path)\n\n"
        "async def main():\n"
        "    return await asyncio.gather(*(start_worker('settings.json') for _ in range(2)))\n\n"
        "asyncio.run(main())\n"
    )
    (folder / "settings.json").write_text("{'debug': True, trailing: garbage}")
    text = _run(sys.executable, str(script), cwd=folder)
    lines = text.splitlines()
    wanted = ["json.decoder.JSONDecodeError", "in load_settings", lines[-1]]
    return "traceback_chained", text, _facts(text, wanted)


def pytest_run(folder: Path) -> Entry:
    tests = folder / "test_cart.py"
    body = ["import pytest", "", "def price(q):", "    return 100 * q", ""]
    for i in range(36):
        body += [f"def test_price_{i}():", f"    assert price({i}) == {100 * i}", ""]
    body += ["def test_discount_rounding():", "    assert round(2.675, 2) == 2.68", ""]
    body += ["def test_refund_total():", "    items = [100, 250]", "    assert sum(items) == 360", ""]
    body += ["def test_parse_coupon():", "    int('TEN-OFF')", ""]
    body += ["@pytest.fixture", "def db():", "    raise ConnectionError('database unreachable')", ""]
    body += ["def test_orders_query(db):", "    pass", ""]
    body += ["@pytest.mark.skip(reason='flaky')", "def test_skipped():", "    pass", ""]
    tests.write_text("\n".join(body))
    (folder / "pytest.ini").write_text("[pytest]\n")
    text = _run(sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", str(tests.name), cwd=folder)
    wanted = [
        "collected 41 items",
        "test_discount_rounding",
        "assert 2.67 == 2.68",
        "test_refund_total",
        "assert 350 == 360",
        "test_parse_coupon",
        "invalid literal for int()",
        "test_orders_query",
        "database unreachable",
        "3 failed",
        "36 passed",
    ]
    return "pytest_run", text, _facts(text, wanted)


def app_log(folder: Path) -> Entry:
    path = folder / "app.log"
    logger = logging.getLogger("bench.app")
    logger.propagate = False
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(name)s] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    rng = random.Random(3)
    logger.info("service starting on port 8080 (workers=4)")
    warnings = 0
    for i in range(4000):
        if i in (1200, 2600):
            try:
                {"a": 1}["payment_gateway"]
            except KeyError:
                logger.exception("charge failed for order 20260801-%04d", i)
        elif i == 3100:
            logger.error("refund worker crashed: connection reset by peer (retry 3/3)")
        elif rng.random() < 0.012:
            warnings += 1
            logger.warning("slow query on orders table: %d ms", rng.randrange(900, 4000))
        else:
            logger.info("GET /orders/%d 200 %dms", rng.randrange(10**6), rng.randrange(5, 80))
    logger.info("shutdown complete")
    handler.close()
    logger.removeHandler(handler)
    text = path.read_text()
    wanted = ["service starting on port 8080", "charge failed for order", "KeyError: 'payment_gateway'"]
    wanted += ["refund worker crashed", "slow query on orders table", "shutdown complete"]
    return "app_log", text, _facts(text, wanted, (warnings,))


# -- HTTP on loopback ---------------------------------------------------------------------

_CSS = "".join(
    f".c{i}{{margin:{i}px;padding:{i % 7}px;font:{10 + i % 5}px/1.4 sans-serif}}\n" for i in range(220)
)


class _Handler(http.server.BaseHTTPRequestHandler):
    error_message_format = (
        "<!DOCTYPE html><html><head><title>%(code)d %(message)s</title><style>" + _CSS + "</style></head>"
        "<body><h1>%(code)d %(message)s</h1><p>%(explain)s</p><p>Request id: req_5d1e</p></body></html>"
    )

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/busy"):
            self.send_error(503)
            return
        rng = random.Random(11)
        body = {
            "data": [_order(rng, 50 + n, "refunded" if n == 29 else None) for n in range(50)],
            "page": 2,
            "per_page": 50,
            "total": 1234,
            "next_cursor": "b3JkZXI6MjAyNjA4MDEtMDEwMA",
        }
        payload = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Link", '<https://api.example.com/orders?page=3>; rel="next"')
        self.send_header("X-RateLimit-Limit", "5000")
        self.send_header("X-RateLimit-Remaining", "4987")
        for name in (
            "X-Request-Id",
            "X-Trace-Id",
            "Strict-Transport-Security",
            "Cache-Control",
            "Vary",
            "ETag",
        ):
            self.send_header(name, f"{name.lower()}-9f8e7d6c5b4a39281706f5e4d3c2b1a0")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def http_pair(_: Path) -> list[Entry]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with urllib.request.urlopen(base + "/orders?page=2") as response:
            value = {
                "status": response.status,
                "headers": dict(response.headers),
                "body": json.loads(response.read()),
            }
        try:
            urllib.request.urlopen(base + "/busy")
            raise AssertionError("expected a 503")
        except urllib.error.HTTPError as error:
            page = error.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    data = value["body"]["data"]
    text = json.dumps(value)
    wanted = [
        "4987",
        "https://api.example.com/orders?page=3",
        data[0]["order_id"],
        "refunded",
        data[-1]["order_id"],
    ]
    wanted += ["b3JkZXI6MjAyNjA4MDEtMDEwMA"]
    return [
        ("http_orders_page", value, _facts(text, wanted, (1234,))),
        ("html_503_page", page, _facts(page, ["503", "Service Unavailable"])),
    ]


# -- HTML docs on disk ------------------------------------------------------------------


class _Headings(html.parser.HTMLParser):
    """Title and h1-h6 texts by the standard library's parser (independent of the compressor)."""

    def __init__(self) -> None:
        super().__init__()
        self.title = ""
        self.headings: list[str] = []
        self._in: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("title", "h1", "h2", "h3", "h4", "h5", "h6"):
            self._in, self._text = tag, []

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            text = " ".join("".join(self._text).replace("\u00b6", "").split())
            if tag == "title":
                self.title = text
            elif text:
                self.headings.append(text)
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self._text.append(data)


def _page_facts(page: str, wanted: list[str]) -> list[FactSpec]:
    """Facts of an HTML page, positioned in its text (tags are not text)."""
    parser = _Headings()
    parser.feed(page)
    text = re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]+>", "", page)))
    placed = _facts(text, [re.sub(r"\s+", "", w) for w in wanted])
    return [(fact, where, "loose") for fact, (_, where, _) in zip(wanted, placed, strict=True)]


def html_docs(_: Path) -> list[Entry]:
    import pydoc
    import sysconfig

    found: list[Entry] = []
    idle = Path(sysconfig.get_paths()["stdlib"]) / "idlelib" / "help.html"
    candidates = [("html_python_idle_help", idle)]
    candidates += [("html_debian_doc", Path("/usr/share/doc/base-passwd/users-and-groups.html"))]
    rust = Path.home() / ".rustup/toolchains"
    candidates += [
        ("html_rust_hashmap", p)
        for p in sorted(rust.glob("*/share/doc/rust/html/std/collections/struct.HashMap.html"))[:1]
    ]
    for name, path in candidates:
        if not path.is_file():
            print(f"skip {name}: {path} not found", file=sys.stderr)
            continue
        page = path.read_text(errors="replace")
        parser = _Headings()
        parser.feed(page)
        heads = parser.headings
        title = (parser.title or heads[0]).split(" — ")[0][:40]
        facts = [title, heads[len(heads) // 2], heads[-1]]
        try:
            found.append((name, page, _page_facts(page, facts)))
        except AssertionError as error:
            print(f"skip {name}: {error}", file=sys.stderr)
    import json as json_module

    page = pydoc.HTMLDoc().page("Python: package json", pydoc.HTMLDoc().document(json_module))
    found.append(
        (
            "html_pydoc_json",
            page,
            _page_facts(page, ["package json", "Package Contents", "Functions", "Bob Ippolito"]),
        )
    )
    return found


# -- hostile inputs (robustness table only) -------------------------------------------------


def hostile_inputs() -> Iterator[tuple[str, Any]]:
    deep: Any = {}
    node = deep
    for _ in range(10_000):
        node["a"] = {}
        node = node["a"]
    yield "dict nested 10,000 deep", deep
    yield "JSON text nested 10,000 deep", "[" * 10_000 + "]" * 10_000
    yield (
        "tuple keys, NaN, inf, bytes, set",
        {(1, 2): math.nan, "x": [math.inf] * 500, "b": b"\xff" * 900, "s": {3, 1, 2}},
    )
    yield "one 1 MB line", "x" * 1_000_000
    loop: list[Any] = []
    loop.append(loop)
    yield "self-containing list", loop


BUILDERS: list[Callable[[Path], Entry | list[Entry]]] = [
    pip_list,
    pip_show_files,
    pip_list_json,
    ps_aux,
    ls_la,
    git_log,
    dpkg_log,
    source_file,
    orders_json_text,
    message_schema,
    validation_text,
    validation_422,
    traceback_chained,
    pytest_run,
    app_log,
    http_pair,
    html_docs,
]


def build(folder: Path) -> list[Entry]:
    entries: list[Entry] = []
    for builder in BUILDERS:
        work = folder / builder.__name__
        work.mkdir()
        try:
            made = builder(work)
        except (OSError, AssertionError, ValueError, StopIteration, subprocess.SubprocessError) as error:
            print(f"skip {builder.__name__}: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        entries += made if isinstance(made, list) else [made]
    return entries


# -- the stored corpus (benchmarks/corpus/, gathered once by benchmarks/corpus/gather.py) ------

STORED = Path(__file__).resolve().parent / "corpus"


def half(name: str) -> str:
    """The fixed split: "tuning" when the first byte of sha256("<kind>/<name>") is even, else
    "held-back". Rules are chosen on the tuning half only; the held-back half only measures."""
    import hashlib

    return "tuning" if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else "held-back"


def stored(which: str | None = None) -> list[Entry]:
    """The stored outputs as entries, `which` half only when given; facts positioned in the input."""
    entries: list[Entry] = []
    for facts_file in sorted(STORED.glob("*/*.facts.json")):
        name = f"{facts_file.parent.name}/{facts_file.name.removesuffix('.facts.json')}"
        if which and half(name) != which:
            continue
        text = facts_file.with_name(facts_file.name.replace(".facts.json", ".txt")).read_text()
        spec = json.loads(facts_file.read_text())
        facts: list[FactSpec] = []
        for fact, kind in spec["facts"]:
            if kind == "count":
                facts.append((fact, "count", "count"))
            else:
                facts.append(_facts(text, [fact])[0])
        entries.append((name, text, facts))
    return entries
