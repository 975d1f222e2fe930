"""Gathers the held-out corpus once: real outputs of this machine, each with its must-keep facts.

Run once (`python benchmarks/corpus/gather.py`); the outputs are stored as
`<kind>/<name>.txt` next to `<kind>/<name>.facts.json` (the command that produced
the output and its facts). Facts are chosen from the data by what a reader of that
kind of output needs (first and last entries, the error line, the counts, full
identifiers), here, before any compressor sees the output, and never edited after.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORK = Path("/tmp/corpus_work")
PY = sys.executable
CAP = 300_000


def run(cmd: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        cmd,
        shell=True,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        errors="replace",
        env={**os.environ, **(env or {})},
    )
    return done.stdout + done.stderr


def save(
    kind: str, name: str, command: str, text: str, facts: list[str], counts: tuple[int, ...] = ()
) -> None:
    if len(text.encode()) > CAP:
        raise SystemExit(f"{kind}/{name} too big: {len(text):,}")
    for fact in facts:
        if fact not in text:
            raise SystemExit(f"{kind}/{name}: fact {fact!r} not in output")
    folder = HERE / kind
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.txt").write_text(text)
    spec = {"command": command, "facts": [[f, "text"] for f in dict.fromkeys(facts)]}
    spec["facts"] += [[str(n), "count"] for n in counts]
    (folder / f"{name}.facts.json").write_text(json.dumps(spec, indent=1, ensure_ascii=False) + "\n")
    print(f"{kind}/{name}: {len(text):,} chars, {len(spec['facts'])} facts")


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# -- git ------------------------------------------------------------------------------------


def git_outputs() -> None:
    for commit in (
        "ec0e42a9f92f0c55c42c1b04c6663eff1a98a84a",
        "2feb572929bd3eba387da57ffbf55babfb83d6a4",
        "31e2970627749c88f489911dacfb87754ad5783b",
        "23a95beacc67655d3dff6fb57547a27ef5dfdad8",
    ):
        cmd = f"git -C /work/main show {commit}"
        text = run(cmd)
        if len(text) > CAP:
            continue
        files = re.findall(r"^diff --git a/(\S+)", text, re.M)
        hunks = re.findall(r"^@@ [^@]+ @@", text, re.M)
        subject = text.splitlines()[4].strip()
        save(
            "git_show",
            commit[:8],
            cmd,
            text,
            [commit, subject, files[0], files[-1], hunks[-1]],
            (len(files),),
        )
    for a, b, under in (
        ("HEAD~3", "HEAD", "agent"),
        ("HEAD~6", "HEAD~3", "tests"),
        ("HEAD~8", "HEAD~5", "benchmarks"),
    ):
        cmd = f"git -C /work/main diff {a} {b} -- {under}"
        text = run(cmd)[:CAP]
        text = text[: text.rfind("\ndiff --git")] if len(text) >= CAP else text
        files = re.findall(r"^diff --git a/(\S+)", text, re.M)
        hunks = re.findall(r"^@@ [^@]+ @@", text, re.M)
        save(
            "git_diff",
            f"{a}_{b}_{under}".replace("~", ""),
            cmd,
            text,
            [files[0], files[-1], hunks[0], hunks[-1]],
            (len(files),),
        )
    cmd = "git -C /work/main log --stat -n 12"
    text = run(cmd)
    hashes = re.findall(r"^commit ([0-9a-f]{40})", text, re.M)
    save("git_log_stat", "stat12", cmd, text, [hashes[0], hashes[-1]], (len(hashes),))
    cmd = "git -C /work/main log --format='%H %an %ad %s' --date=iso"
    text = run(cmd)
    rows = lines_of(text)
    save(
        "git_log_oneline",
        "full",
        cmd,
        text,
        [rows[0].split()[0], rows[-1].split()[0], rows[len(rows) // 2].split()[0]],
    )


# -- build and lint logs with one error -----------------------------------------------------


def compile_logs() -> None:
    stdlib = Path(os.__file__).parent
    every = tuple(
        p.name
        for p in stdlib.iterdir()
        if p.is_dir()
        and (p / "__init__.py").exists()
        and p.name not in ("test", "idlelib", "lib2to3", "site-packages", "tkinter", "turtledemo")
    )
    for label, package, broken_at in (("stdlib_mid", every, 0.5), ("stdlib_early", every, 0.3)):
        root = WORK / f"compile_{label}"
        shutil.rmtree(root, ignore_errors=True)
        for name in package:
            shutil.copytree(stdlib / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        files = sorted(root.rglob("*.py"))
        victim = files[int(len(files) * broken_at)]
        victim.write_text(victim.read_text() + "\ndef broken(:\n    pass\n")
        cmd = f"python -m compileall -f {root}"
        text = run(f"{PY} -m compileall -f {root}")
        error = next(line for line in text.splitlines() if "SyntaxError" in line)
        save("compileall", label, cmd, text, [str(victim), error.strip(), text.splitlines()[0]], ())
    # gcc: a make-style run over generated C files, one of which has a type error
    root = WORK / "gcc"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for i in range(300):
        body = f"int f{i}(int x) {{ return x * {i}; }}\n"
        if i == 211:
            body = f"int f{i}(int x) {{ return x * undefined_symbol_{i}; }}\n"
        (root / f"unit_{i:03d}.c").write_text(body)
    script = 'for f in unit_*.c; do echo "gcc -O2 -Wall -c $f -o ${f%.c}.o"; gcc -O2 -Wall -c $f -o ${f%.c}.o || echo "make: *** [Makefile: ${f%.c}.o] Error 1"; done; echo \'make: Target all not remade because of errors.\''  # noqa: E501
    text = run(script, cwd=root)
    error = next(line for line in text.splitlines() if "error:" in line)
    save(
        "gcc_make",
        "units300",
        script,
        text,
        [
            error.strip(),
            "make: *** [Makefile: unit_211.o] Error 1",
            "gcc -O2 -Wall -c unit_000.c -o unit_000.o",
        ],
    )
    # javac -verbose: thousands of loading lines, one error
    root = WORK / "javac"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for i in range(40):
        extra = '    int y = "text";\n' if i == 27 else ""
        (root / f"Unit{i}.java").write_text(
            f"import java.util.*;\npublic class Unit{i} {{\n  List<String> items = new ArrayList<>();\n"
            f"  int run() {{\n{extra}    return items.size() + {i};\n  }}\n}}\n"
        )
    cmd = "javac -verbose -d out Unit*.java"
    text = run(cmd, cwd=root)
    error = next(line for line in text.splitlines() if "error:" in line)
    last = lines_of(text)[-1]
    save("javac", "verbose40", cmd, text, [error.strip(), last.strip(), "incompatible types"])
    # rustc: a crate with warnings and one error
    root = WORK / "rust_err"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    src = "".join(f"fn unused_{i}() -> u32 {{ let x = {i}; {i} }}\n" for i in range(30))
    src += (
        'fn main() {\n    let v: Vec<u32> = Vec::new();\n    let s: String = v;\n    println!("{}", s);\n}\n'
    )
    (root / "main.rs").write_text(src)
    cmd = "rustc main.rs"
    text = run(cmd, cwd=root)
    save(
        "rustc",
        "mismatch",
        cmd,
        text,
        ["error[E0308]: mismatched types", "main.rs:33:21", "warning: unused variable: `x`", "main.rs:30:29"],
    )
    # ruff over a copy of a stdlib package: thousands of violations and a summary
    root = WORK / "ruff"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(stdlib / "email", root / "email", ignore=shutil.ignore_patterns("__pycache__"))
    ruff = REPO / ".venv/bin/ruff"
    cmd = "ruff check --no-cache --select E,W,F,B,UP,SIM,N,C4,PL --output-format concise email"
    text = run(
        f"{ruff} check --no-cache --isolated --select E,W,F,B,UP,SIM,N,C4,PL --output-format concise email",
        cwd=root,
    )
    rows = lines_of(text)
    save("ruff", "email_pkg", cmd, text, [rows[0], rows[-1], *[r for r in rows if r.startswith("Found")][:1]])


# -- tables -----------------------------------------------------------------------------------


def tables() -> None:
    for cmd, name in (
        ("dpkg -l", "dpkg_l"),
        ("dpkg-query -W -f='${Package}\\t${Version}\\t${Installed-Size}\\n'", "query"),
    ):
        text = run(cmd)
        rows = [line for line in lines_of(text) if line.startswith("ii ") or name == "query"]
        first, last, mid = rows[0].split()[:3], rows[-1].split()[:3], rows[len(rows) // 2].split()[:3]
        facts = [first[1 if name == "dpkg_l" else 0], last[1 if name == "dpkg_l" else 0]]
        facts += [mid[2] if name == "dpkg_l" else mid[1]]
        save("dpkg", name, cmd, text, facts, (len(rows),))
    cmd = "apt list --installed"
    text = run(cmd + " 2>/dev/null")
    rows = [line for line in lines_of(text) if "/" in line]
    save("apt_list", "installed", cmd, text, [rows[0], rows[-1], rows[len(rows) // 3]], (len(rows),))
    for cmd, name in (
        ("ps -eo pid,ppid,user,stat,rss,etime,comm --sort=pid", "ps_eo"),
        ("ps -eLo pid,lwp,user,stat,nlwp,rss,vsz,etime,comm", "ps_threads"),
    ):
        text = run(cmd)
        rows = lines_of(text)
        save("ps", name, cmd, text, [rows[0], rows[1], rows[-1]], (len(rows) - 1,))
    cmd = "top -b -n 1 -w 200"
    text = run(cmd)
    rows = lines_of(text)
    tasks = next(r for r in rows if r.startswith("Tasks:"))
    save("top", "batch", cmd, text, [tasks, rows[-1].split()[0]])
    cmd = "ls -la --time-style=long-iso /usr/bin"
    text = run(cmd)
    rows = lines_of(text)
    save(
        "ls_table",
        "usr_bin",
        cmd,
        text,
        [rows[0], rows[-1].split()[-1], rows[3].split()[-1]],
        (len(rows) - 1,),
    )


# -- data formats ---------------------------------------------------------------------------


def packages_db() -> sqlite3.Connection:
    db = sqlite3.connect(WORK / "packages.db")
    db.execute("drop table if exists packages")
    db.execute(
        "create table packages (id integer primary key, name text, version text, size integer, section text)"
    )
    db.execute("create index by_section on packages(section)")
    text = run("dpkg-query -W -f='${Package}\\t${Version}\\t${Installed-Size}\\t${Section}\\n'")
    rows = [line.split("\t") for line in text.splitlines() if line.count("\t") == 3]
    db.executemany(
        "insert into packages (name, version, size, section) values (?, ?, ?, ?)",
        [(n, v, int(s or 0), sec) for n, v, s, sec in rows],
    )
    db.commit()
    return db


def data_formats() -> None:
    db = packages_db()
    dbpath = WORK / "packages.db"
    for name, query in (
        ("by_size", "select * from packages order by size desc"),
        (
            "sections",
            "select section, count(*) n, sum(size) total from packages group by section order by n desc",
        ),
    ):
        cmd = f"sqlite3 -csv -header {dbpath} '{query}'"
        text = run(f'sqlite3 -csv -header {dbpath} "{query}"')
        rows = lines_of(text)
        save("csv", name, cmd, text, [rows[0], rows[1], rows[-1], rows[len(rows) // 2]], (len(rows) - 1,))
    buf = io.StringIO()
    cursor = db.execute("select id, name, version, size from packages")
    writer = csv.writer(buf)
    writer.writerow(["id", "name", "version", "size"])
    writer.writerows(cursor)
    text = buf.getvalue()
    rows = lines_of(text)
    save(
        "csv",
        "python_csv",
        "python csv.writer over sqlite3 packages table",
        text,
        [rows[0], rows[-1], rows[1]],
        (len(rows) - 1,),
    )
    # NDJSON
    records = [
        dict(zip(("id", "name", "version", "size", "section"), r, strict=True))
        for r in db.execute("select * from packages")
    ]
    text = "".join(json.dumps(r) + "\n" for r in records)
    save(
        "ndjson",
        "packages",
        "json.dumps per sqlite3 row of packages",
        text,
        [json.dumps(records[0]), json.dumps(records[-1])],
        (len(records),),
    )
    log = run("git -C /work/main log --format='%H%x09%an%x09%ad%x09%s' --date=iso-strict")
    recs = [
        dict(zip(("hash", "author", "date", "subject"), line.split("\t"), strict=False))
        for line in log.splitlines()
    ]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    save(
        "ndjson",
        "git_commits",
        "git log --format=... | json.dumps per line",
        text,
        [recs[0]["hash"], recs[-1]["hash"]],
        (len(recs),),
    )
    rng = random.Random(7)
    events = []
    for i in range(1500):
        level = "INFO"
        if i == 977:
            level = "ERROR"
        events.append(
            {
                "ts": f"2026-12-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z",
                "level": level,
                "event": "request",
                "path": f"/api/items/{rng.randrange(10_000)}",
                "status": 500 if level == "ERROR" else 200,
                "ms": rng.randrange(1, 400),
            }
        )
    text = "".join(json.dumps(e) + "\n" for e in events)
    save(
        "ndjson",
        "structlog",
        "json.dumps of 1,500 logging events (one ERROR)",
        text,
        [json.dumps(events[977]), json.dumps(events[0]), json.dumps(events[-1])],
        (1500,),
    )
    # YAML
    import yaml

    for path in (
        "/usr/lib/google-cloud-sdk/lib/googlecloudsdk/schemas/compute/beta/Instance.yaml",
        "/usr/lib/google-cloud-sdk/lib/googlecloudsdk/schemas/compute/beta/BackendService.yaml",
    ):
        text = Path(path).read_text()
        keys = re.findall(r"^  (\w+):", text, re.M)
        save("yaml", Path(path).stem, f"cat {path}", text, [lines_of(text)[0], keys[0], keys[-1]])
    inspect = json.loads(run(f"{PY} -m pip inspect --local --disable-pip-version-check 2>/dev/null"))
    data = [
        {
            "name": i["metadata"]["name"],
            "version": i["metadata"]["version"],
            "requires": i["metadata"].get("requires_dist", [])[:5],
        }
        for i in inspect["installed"]
    ]
    text = yaml.safe_dump(data, sort_keys=False)
    save(
        "yaml",
        "pip_inspect",
        "yaml.safe_dump(pip inspect --local, name/version/requires)",
        text,
        [f"name: {data[0]['name']}", f"name: {data[-1]['name']}", f"version: {data[-1]['version']}"],
        (len(data),),
    )
    # XML
    for path in ("/usr/share/xml/iso-codes/iso_3166-1.xml", "/usr/share/xml/iso-codes/iso_4217.xml"):
        text = Path(path).read_text()
        entries = re.findall(r"<iso_\w+_entry", text)
        body = [line for line in lines_of(text) if "_entry" in line]
        save(
            "xml", Path(path).stem, f"cat {path}", text, [body[0].strip(), body[-1].strip()], (len(entries),)
        )
    import xml.etree.ElementTree as ET

    root = ET.Element("packages", count=str(len(records)))
    for r in records[:1200]:
        ET.SubElement(root, "package", name=r["name"], version=r["version"]).text = r["section"]
    text = ET.tostring(root, encoding="unicode")
    save(
        "xml",
        "etree_packages",
        "xml.etree.ElementTree.tostring of packages",
        text,
        [f'name="{records[0]["name"]}"', f'name="{records[1199 if len(records) > 1199 else -1]["name"]}"'],
    )
    # SQL plans and dumps
    q = (
        "select p.section, count(*), max(q.size) from packages p join packages q on q.section = p.section "
        "where p.size > 100 and q.name like 'lib%' group by p.section order by 2 desc"
    )
    text = "\n".join("|".join(map(str, row)) for row in db.execute("explain " + q)) + "\n"
    rows = lines_of(text)
    save(
        "sql_plan",
        "explain_bytecode",
        f"python sqlite3: EXPLAIN {q}",
        text,
        [rows[0], rows[-1]],
        (len(rows),),
    )
    q = " union all ".join(
        f"select name, size from packages where section = 's{i}' and size > {i} and name in "
        f"(select name from packages where version like '{i}%')"
        for i in range(30)
    )
    text = "\n".join(str(row) for row in db.execute("explain query plan " + q)) + "\n"
    big = "\n".join(f"{q} -- variant {i}" for i in range(1))
    save(
        "sql_plan",
        "query_plan",
        f"python sqlite3: EXPLAIN QUERY PLAN {big}",
        text,
        [lines_of(text)[0], lines_of(text)[-1]],
    )
    cmd = f"sqlite3 {dbpath} .dump"
    text = run(cmd)
    rows = lines_of(text)
    inserts = [r for r in rows if r.startswith("INSERT")]
    save("sql_dump", "packages", cmd, text, [rows[1], inserts[0], inserts[-1], rows[-1]], (len(inserts),))


def blobs() -> None:
    rustdoc = Path(run("rustc --print sysroot").strip()) / "share/doc/rust/html"
    js = sorted(p for p in rustdoc.rglob("*.js") if 20_000 < p.stat().st_size < CAP)[:2]
    css = sorted(p for p in rustdoc.rglob("*.css") if 10_000 < p.stat().st_size < CAP)[:1]
    css += [Path("/usr/share/doc/libexpat1-dev/expat.html/ok.min.css")]
    for kind, paths in (("minified_js", js), ("minified_css", css)):
        for path in paths:
            text = path.read_text()
            save(kind, path.stem, f"cat {path}", text, [text[:40], text.rstrip()[-30:]])
    png = next(p for p in rustdoc.rglob("*.png"))
    cmd = f"base64 -w0 {png}"
    text = run(cmd)
    save("base64", "png_oneline", cmd, text, [text[:40], text[-30:]])
    cmd = "base64 /usr/bin/sleep"
    text = run(cmd)
    rows = lines_of(text)
    save("base64", "sleep_wrapped", cmd, text, [rows[0], rows[-1]], (len(rows),))
    cmd = "xxd /usr/bin/true | head -n 2000"
    text = run(cmd)
    rows = lines_of(text)
    save("hexdump", "true", cmd, text, [rows[0], rows[-1]])
    cmd = "od -c /usr/bin/false | head -n 1500"
    text = run(cmd)
    rows = lines_of(text)
    save("hexdump", "od_false", cmd, text, [rows[0], rows[-1]])


# -- stack traces of other languages --------------------------------------------------------


def traces() -> None:
    root = WORK / "traces"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / "deep.js").write_text(
        "function walk(node, depth) {\n  if (depth === 0) { return node.child.value; }\n"
        "  return walk(node, depth - 1);\n}\nwalk({child: null}, 8);\n"
    )
    text = run("node deep.js", cwd=root)
    save(
        "node_trace",
        "typeerror",
        "node deep.js",
        text,
        ["TypeError: Cannot read properties of null (reading 'value')", f"{root}/deep.js:2:40", "Node.js v"],
    )
    (root / "reject.mjs").write_text(
        "async function load(id) { throw new Error(`config ${id} not found`, {cause: new RangeError('id out of range')}); }\n"  # noqa: E501
        "async function main() { await Promise.all([1, 2, 3].map((i) => load(i * 7))); }\nmain();\n"
    )
    text = run("node reject.mjs", cwd=root)
    save(
        "node_trace",
        "unhandled",
        "node reject.mjs",
        text,
        ["Error: config 7 not found", "RangeError: id out of range", f"{root}/reject.mjs:1"],
    )
    (root / "Main.java").write_text(
        "public class Main {\n  static int parse(String s) { return Integer.parseInt(s); }\n"
        "  static int load(String s) { try { return parse(s); } catch (NumberFormatException e) {\n"
        '    throw new IllegalStateException("bad config value: " + s, e); } }\n'
        "  static int deep(int n, String s) { return n == 0 ? load(s) : deep(n - 1, s); }\n"
        '  public static void main(String[] a) { deep(40, "12x"); }\n}\n'
    )
    text = run("javac Main.java && java Main", cwd=root)
    save(
        "java_trace",
        "caused_by",
        "javac Main.java && java Main",
        text,
        [
            'Exception in thread "main" java.lang.IllegalStateException: bad config value: 12x',
            'Caused by: java.lang.NumberFormatException: For input string: "12x"',
            "at Main.parse(Main.java:2)",
            "more",
        ],
    )
    (root / "Stream.java").write_text(
        "import java.util.*;\npublic class Stream {\n  public static void main(String[] a) {\n"
        "    List<Integer> xs = new ArrayList<>(List.of(1, 2, 3));\n"
        "    xs.stream().map(x -> 10 / (x - 2)).forEach(System.out::println);\n  }\n}\n"
    )
    text = run("javac Stream.java && java Stream", cwd=root)
    save(
        "java_trace",
        "lambda",
        "javac Stream.java && java Stream",
        text,
        ["java.lang.ArithmeticException: / by zero", "Stream.java:5"],
    )
    (root / "panic.rs").write_text(
        "fn get(v: &[u32], i: usize) -> u32 { v[i] }\nfn sum(v: &[u32]) -> u32 { (0..=v.len()).map(|i| get(v, i)).sum() }\n"  # noqa: E501
        'fn main() { let v = vec![1, 2, 3]; println!("{}", sum(&v)); }\n'
    )
    text = run("rustc -g panic.rs -o panic && RUST_BACKTRACE=1 ./panic", cwd=root)
    save(
        "rust_panic",
        "index",
        "rustc -g panic.rs && RUST_BACKTRACE=1 ./panic",
        text,
        ["panicked at panic.rs:1:38", "index out of bounds: the len is 3 but the index is 3", "panic::get"],
    )
    (root / "unwrap.rs").write_text(
        "use std::collections::HashMap;\nfn main() { let m: HashMap<&str, u32> = HashMap::new();\n"
        '  let port: u16 = "80a".parse().unwrap(); println!("{} {:?}", port, m.get("x")); }\n'
    )
    text = run("rustc -g unwrap.rs -o unwrap && RUST_BACKTRACE=full ./unwrap", cwd=root)
    save(
        "rust_panic",
        "unwrap_full",
        "rustc -g unwrap.rs && RUST_BACKTRACE=full ./unwrap",
        text,
        [
            "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
            "unwrap.rs:3:33",
        ],
    )
    (root / "recurse.py").write_text("def f(n):\n    return f(n + 1)\n\nf(0)\n")
    text = run(f"{PY} recurse.py", cwd=root)
    save(
        "py_trace",
        "recursion",
        "python recurse.py",
        text,
        ["RecursionError: maximum recursion depth exceeded", "more times]", 'recurse.py", line 4'],
    )


# -- resolvers, HTTP, JSON, prose, pages ----------------------------------------------------


def wheel(folder: Path, name: str, version: str, requires: list[str]) -> None:
    dist = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as z:
        z.writestr(f"{dist}/METADATA", meta)
        z.writestr(
            f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        z.writestr(f"{dist}/RECORD", "")


def resolvers() -> None:
    wheels = WORK / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir(parents=True)
    for v in ("1.0", "2.0"):
        wheel(wheels, "corelib", v, [])
    wheel(wheels, "webapp", "3.1", ["corelib==1.0"])
    wheel(wheels, "worker", "0.9", ["corelib>=2.0"])
    cmd = f"pip install --dry-run --no-index --find-links {wheels} webapp==3.1 worker==0.9"
    text = run(f"{PY} -m {cmd} --disable-pip-version-check")
    save(
        "pip_resolver",
        "conflict",
        cmd,
        text,
        ["ResolutionImpossible", "webapp 3.1 depends on corelib==1.0", "worker 0.9 depends on corelib>=2.0"],
    )
    cmd = f"pip install -v --dry-run --no-index --find-links {wheels} webapp==3.1 corelib==2.0"
    text = run(f"{PY} -m {cmd} --disable-pip-version-check")
    save(
        "pip_resolver",
        "verbose",
        cmd,
        text,
        ["ResolutionImpossible", "webapp 3.1 depends on corelib==1.0", lines_of(text)[0]],
    )
    cmd = "pip install --dry-run --no-index nosuchpkg-xyz==1.2.3"
    text = run(f"{PY} -m {cmd} --disable-pip-version-check")
    save("pip_resolver", "not_found", cmd, text, ["No matching distribution found for nosuchpkg-xyz==1.2.3"])
    root = WORK / "npm"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / "package.json").write_text(
        '{"name": "demo", "version": "1.0.0", "dependencies": {"left-pad-nope": "^9.9.9"}}'
    )
    cmd = "npm install --offline --no-audit --no-fund"
    text = run(cmd, cwd=root)
    rows = lines_of(text)
    save(
        "npm_error",
        "offline",
        cmd,
        text,
        [next(r for r in rows if "ENOTCACHED" in r or "code" in r), rows[-1]],
    )
    (root / "package.json").write_text('{"name": "demo", "version": "1.0.0",, }')
    cmd = "npm ls"
    text = run(cmd, cwd=root)
    rows = lines_of(text)
    save("npm_error", "ejsonparse", cmd, text, [next(r for r in rows if "EJSONPARSE" in r), rows[-1]])


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def http_pages() -> None:
    docroot = Path("/usr/share/doc")
    server = ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: Quiet(*a, directory=str(docroot)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"

    def fetch(path: str, method: str = "GET") -> str:
        request = urllib.request.Request(base + path, method=method)
        try:
            response = urllib.request.urlopen(request, timeout=10)
            status, reason, headers, body = (
                response.status,
                response.reason,
                response.headers,
                response.read(),
            )
        except urllib.error.HTTPError as error:
            status, reason, headers, body = error.code, error.reason, error.headers, error.read()
        head = "".join(f"{k}: {v}\n" for k, v in headers.items() if k != "Date")
        return f"HTTP/1.0 {status} {reason}\n{head}\n{body.decode('utf-8', 'replace')}"

    text = fetch("/no/such/page.html")
    save(
        "http_error",
        "404",
        "GET /no/such/page.html from python -m http.server on loopback",
        text,
        ["HTTP/1.0 404 File not found", "Error code: 404"],
    )
    text = fetch("/", "DELETE")
    save(
        "http_error",
        "501",
        "DELETE / from python -m http.server on loopback",
        text,
        ["HTTP/1.0 501 Unsupported method ('DELETE')", "Error code: 501"],
    )
    text = fetch("/")
    names = re.findall(r'<a href="([^"]+)">', text)
    save(
        "html_listing",
        "usr_share_doc",
        "GET / from python -m http.server --directory /usr/share/doc",
        text,
        ["Directory listing for /", names[0], names[-1]],
        (len(names),),
    )
    server.shutdown()


def json_and_prose() -> None:
    cmd = "python -c 'json.dumps(sysconfig.get_config_vars(), sort_keys=False)'"
    import sysconfig

    data = {k: v for k, v in sysconfig.get_config_vars().items() if isinstance(v, (str, int))}
    text = json.dumps(data)
    keys = list(data)
    save(
        "long_json",
        "sysconfig",
        cmd,
        text,
        [f'"{keys[0]}"', f'"{keys[-1]}"', f'"{keys[len(keys) // 2]}"'],
        (len(keys),),
    )
    cmd = "node -p 'JSON.stringify(process.config)'"
    text = run(cmd)
    data = json.loads(text)
    flat = list(data["variables"])
    save("long_json", "node_config", cmd, text, ['"target_defaults"', f'"{flat[0]}"', f'"{flat[-1]}"'])
    cmd = "pip inspect --local (compact JSON)"
    inspect = json.loads(run(f"{PY} -m pip inspect --local --disable-pip-version-check 2>/dev/null"))
    inspect["installed"] = inspect["installed"][:12]
    text = json.dumps(inspect)
    names = [i["metadata"]["name"] for i in inspect["installed"]]
    save(
        "long_json",
        "pip_inspect",
        cmd,
        text,
        ['"version"', '"environment"', f'"{names[0]}"', f'"{names[-1]}"'],
        (len(names),),
    )
    path = "/usr/share/iso-codes/json/iso_3166-1.json"
    data = json.loads(Path(path).read_text())
    text = json.dumps(data, indent=2)
    entries = data["3166-1"]
    save(
        "pretty_json",
        "iso_3166",
        f"python -m json.tool {path}",
        text,
        [entries[0]["name"], entries[-1]["name"], '"3166-1"'],
        (len(entries),),
    )
    cmd = "npm config ls -l --json"
    text = run(cmd)
    keys = list(json.loads(text))
    save("pretty_json", "npm_config", cmd, text, [f'"{keys[0]}"', f'"{keys[-1]}"'], (len(keys),))
    for path, middle in (
        ("/usr/share/common-licenses/GPL-3", "8. Termination."),
        ("/usr/share/common-licenses/Apache-2.0", "4. Redistribution."),
    ):
        text = Path(path).read_text()
        rows = lines_of(text)
        save("prose", Path(path).stem, f"cat {path}", text, [rows[0].strip(), middle, rows[-1].strip()])
    for module in ("json", "sqlite3"):
        cmd = f"python -m pydoc -w {module}"
        run(f"{PY} -m pydoc -w {module}", cwd=WORK)
        text = (WORK / f"{module}.html").read_text()
        found = re.findall(r'<a name="-([\w.]+)">', text)
        save(
            "html_pydoc",
            module,
            cmd,
            text,
            [f"<strong>{module}</strong>" if False else module, found[0], found[-1]],
        )
    page = next(
        Path(run("rustc --print sysroot").strip()).glob("share/doc/rust/html/std/vec/struct.Vec.html")
    )
    text = page.read_text()
    if len(text) < CAP:
        save("html_rustdoc", "vec", f"cat {page}", text, ["Struct Vec", "fn push"])


def logs_and_misc() -> None:
    cmd = "tail -n 3000 /var/log/dpkg.log"
    text = run(cmd)
    rows = lines_of(text)
    save("syslog", "dpkg_tail", cmd, text, [rows[0], rows[-1]])
    cmd = "cat /var/log/apt/history.log"
    text = run(cmd)[:CAP]
    rows = lines_of(text)
    save("syslog", "apt_history", cmd, text, [rows[0], rows[-1], *[r for r in rows if "Error" in r][:1]])
    root = WORK / "pytest"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / "test_many.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('n', range(400))\ndef test_square(n):\n"
        "    assert n * n != 73441, f'collision at {n}'\n\ndef test_tail():\n    assert True\n"
    )
    cmd = "pytest -v -p no:cacheprovider test_many.py"
    text = run(f"{PY} -m {cmd}", cwd=root)
    save(
        "pytest",
        "verbose_one_fail",
        cmd,
        text,
        ["test_many.py::test_square[271] FAILED", "AssertionError: collision at 271", "1 failed, 400 passed"],
    )
    cmd = "python -m sysconfig"
    text = run(f"{PY} -m sysconfig")
    rows = lines_of(text)
    save("keyvalue", "sysconfig", cmd, text, [rows[0], rows[-1], 'Platform: "linux-x86_64"'])
    cmd = "find /usr/share/doc -maxdepth 2"
    text = run(cmd + " | sort")
    rows = lines_of(text)
    save("paths", "usr_share_doc", cmd, text, [rows[1], rows[-1]], (len(rows),))
    cmd = "python -X importtime -c 'import json, email.mime.text, http.client, asyncio'"
    text = run(f"{PY} -X importtime -c 'import json, email.mime.text, http.client, asyncio'")
    rows = lines_of(text)
    save("importtime", "asyncio", cmd, text, [rows[0], rows[-1]])


if __name__ == "__main__":
    WORK.mkdir(exist_ok=True)
    only = sys.argv[1:]
    for step in (
        git_outputs,
        compile_logs,
        tables,
        data_formats,
        blobs,
        traces,
        resolvers,
        http_pages,
        json_and_prose,
        logs_and_misc,
    ):
        if not only or step.__name__ in only:
            step()
