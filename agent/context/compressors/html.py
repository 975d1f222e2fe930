"""HTML: the readable text with its headings, boilerplate dropped, error pages as one line.

Built from regular expressions rather than an HTML parser: the C regex engine
strips a page at tens of megabytes a second, while `html.parser` manages a few.
The page is reduced to lines of text, headings marked with `#`; the compressor then
keeps the title, every heading it can, the first line under each heading, and the
start and end of the text. Scripts, styles, navigation, sidebars, headers, footers
and forms are removed before anything is measured.
"""

from __future__ import annotations

import html
import re

from agent.context.compressors.common import clip, pick_lines, where

__all__ = ["compress_html", "html_to_lines"]

_FLAGS = re.DOTALL  # tag names are lower-cased first (`_lower_tags`): case-insensitive matching is 2x slower
_UPPER_TAG = re.compile(r"</?[a-z0-9]*[A-Z][A-Za-z0-9]*")
_COMMENT = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>", re.DOTALL)
_DROP = re.compile(
    r"<(script|style|noscript|svg|template|iframe|nav|footer|aside|form|select|button|head)\b[^>]*>.*?</\1\s*>",
    _FLAGS,
)
_BOILER = re.compile(
    r"<div\b[^>]*\bclass=\"[^\"]*\b(?:sphinxsidebar|related|sidebar|navigation|breadcrumbs?|toc|footer|menu)\b"
    r"[^\"]*\"[^>]*>(?:(?!<div\b).)*?</div\s*>",
    _FLAGS,
)
_TITLED = re.compile(
    r"<(strong|b|span|td|div)\b[^>]*\bclass=\"[^\"]*\b(?:bigsection|section-title|section-heading)\b[^\"]*\"[^>]*>"
    r"((?:(?!</?\1\b).){1,200}?)</\1\s*>",
    _FLAGS,
)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", _FLAGS)
_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", _FLAGS)
_BLOCK = re.compile(
    r"<(?:/?(?:p|div|section|article|main|header|li|ul|ol|dl|dt|dd|tr|table|thead|tbody|pre|blockquote|br|hr"
    r"|h[1-6]|summary|details|figure|figcaption)\b)[^>]*>"
)
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"[ \t\r\f\v\xa0]{2,}|[\t\r\f\v\xa0]")  # only runs that need replacing
_TROUBLE = r"(?:error|not found|forbidden|unauthorized|unavailable|denied|gateway|timeout|too many requests)"
_ERROR_PAGE = re.compile(
    rf"\b(?:[45]\d\d\b.*?{_TROUBLE}|{_TROUBLE}.*?\b[45]\d\d)\b", re.IGNORECASE | re.DOTALL
)


def _flat(fragment: str) -> str:
    """Inner HTML on one line without tags (entities stay escaped until the page is)."""
    return " ".join(_TAG.sub("", fragment).split())


def _inline(fragment: str) -> str:
    return _SPACE.sub(" ", html.unescape(_TAG.sub("", fragment))).strip()


def _lower_tags(page: str) -> str:
    """Tag names in lower case, for pages that write them in upper case (judged by their start)."""
    return _UPPER_TAG.sub(lambda m: m.group(0).lower(), page) if _UPPER_TAG.search(page, 0, 5000) else page


def _clean(page: str) -> str:
    """The page without comments, scripts, styles, navigation and other boilerplate blocks."""
    page = _lower_tags(page)
    body = _BOILER.sub("\n", _DROP.sub("\n", _COMMENT.sub(" ", page)))
    if "section-title" in body or "bigsection" in body or "section-heading" in body:
        body = _retitle(body)
    return body


_TITLE_CLASS = re.compile(r"class=\"[^\"]*\b(?:bigsection|section-title|section-heading)\b")


def _retitle(body: str) -> str:
    """Section titles styled by class (pydoc) as `<h3>`: the regex is tried only at the tags that
    carry such a class (found by their literal `class="`), not at every tag of the page."""
    out: list[str] = []
    pos = 0
    for found in _TITLE_CLASS.finditer(body):
        start = body.rfind("<", pos, found.start())
        titled = _TITLED.match(body, start) if start >= 0 else None
        if titled:
            out += [body[pos:start], f"<h3>{titled.group(2)}</h3>"]
            pos = titled.end()
    out.append(body[pos:])
    return "".join(out)


_WHITE = (("\t", " "), ("\r", " "), ("\f", " "), ("\v", " "), ("\xa0", " "), ("\u00b6", ""), ("\u00a7", ""))
_RUNS = re.compile(r"  +")
_ENTITY = re.compile(r"&(?!amp;)#?\w+;")


def _unescape(text: str) -> str:
    """`html.unescape`, 5-10x faster on pages full of `&nbsp;` (pydoc): common entities by
    `str.replace`, the general decoder only when others remain."""
    if "&" not in text:
        return text
    for entity, char in (("&nbsp;", "\xa0"), ("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&#39;", "'")):
        text = text.replace(entity, char)
    return html.unescape(text) if _ENTITY.search(text) else text.replace("&amp;", "&")


def _lines(fragment: str) -> list[str]:
    """Cleaned HTML as text lines; headings become `#`-prefixed lines."""
    body = _HEADING.sub(lambda m: f"\n{'#' * int(m.group(1))} {_flat(m.group(2))}\n", fragment)
    body = _BLOCK.sub("\n", body)
    body = _unescape(_TAG.sub("", body))
    for char, replacement in _WHITE:  # str.replace per char: far faster than translate or a regex
        if char in body:
            body = body.replace(char, replacement)  # permalink marks dropped too
    body = _RUNS.sub(" ", body)
    stripped = [line for line in map(str.strip, body.split("\n")) if line]
    return [line for n, line in enumerate(stripped) if n == 0 or line != stripped[n - 1]]


def html_to_lines(page: str) -> tuple[str, list[str]]:
    """(title, text lines) of a whole page; headings become `#`-prefixed lines."""
    title_match = _TITLE.search(_lower_tags(page[:20_000]))
    return (_inline(title_match.group(1)) if title_match else ""), _lines(_clean(page))


def _windowed(body: str, head: int, tail: int) -> list[str]:
    """Text lines of the first `head` and last `tail` chars of `body`, and between them only the
    headings: of a long page's middle, the outline is all that would fit anyway."""
    if len(body) <= head + tail:
        return _lines(body)
    cut_head = body.find("<", head)
    cut_tail = body.rfind("<", 0, len(body) - tail)
    if cut_head < 0 or cut_tail <= cut_head:
        return _lines(body)
    lines = _lines(body[:cut_head])
    found_before, seen = None, set[str]()
    for found in _HEADING.finditer(body, cut_head, cut_tail):
        terms = _terms(body, found_before.end() if found_before else cut_head, found.start())
        lines += [] if seen.intersection(terms) else terms  # inherited members: named once
        seen.update(terms)
        text = html.unescape(_flat(found.group(2))).replace("\u00b6", "").replace("\u00a7", "").strip()
        if text:
            lines.append(f"{'#' * int(found.group(1))} {text}")
        found_before = found
    lines += _terms(body, found_before.end() if found_before else cut_head, cut_tail)
    return lines + _lines(body[cut_tail:])


_TERM = re.compile(r"<dt\b[^>]*>(.{1,400}?)</dt\s*>", _FLAGS)
_TERMS_WIDTH = 120
_PARTIAL = re.compile(r"defines [\d,]+: .*, \+\d+ more$")
_NAME = re.compile(r"[^\s(=:\[]{1,60}")


def _terms(body: str, start: int, end: int) -> list[str]:
    """The names a section of a long page's middle defines (`<dt>` terms: an API reference's
    functions, a glossary's words), as one line: the outline says what is there, by name. Only
    the names that fit are extracted; the rest are only counted (a reference page has hundreds)."""
    if end - start < 20 or body.find("<dt", start, end) < 0:
        return []
    names: dict[str, None] = {}
    width, count = 0, 0
    for found in _TERM.finditer(body, start, end):
        count += 1
        if width > _TERMS_WIDTH:
            continue
        name = _NAME.match(_unescape(_flat(found.group(1)[:200])))
        if name is None or name.group(0) in names:
            count -= 1
            continue
        width += len(name.group(0)) + 2
        if width <= _TERMS_WIDTH:
            names[name.group(0)] = None
    more = f", +{count - len(names)} more" if count > len(names) else ""
    return [f"defines {count:,}: {', '.join(names)}{more}"] if names else []


def _items(body: str) -> str:
    """How many links, list items and table rows the page has: what a cut page lists, counted.
    `body` is the cleaned page, its tag names in lower case."""
    counts = [
        (body.count("<a href"), "links"),
        (body.count("<li"), "list items"),
        (body.count("<tr"), "table rows"),
    ]
    return "".join(f", {n:,} {label}" for n, label in counts if n)


def compress_html(page: str, budget: int, pointer: str | None) -> str:
    title_match = _TITLE.search(_lower_tags(page[:20_000]))
    title = _inline(title_match.group(1)) if title_match else ""
    body = _clean(page)
    if len(body) < 20_000:
        lines = _lines(body)
        summary = " | ".join(
            [title, *lines] if title and (not lines or lines[0].lstrip("# ") != title) else lines
        )
        if len(summary) < 1500 and _ERROR_PAGE.search(summary[:600]):
            return clip(f"HTML error page: {summary}", min(budget, 300))
        if len(summary) + 40 <= budget:
            return f"HTML page: {summary}"
    else:
        lines = _windowed(body, 6 * budget, 2 * budget)  # 3-5x the budget in text: more is never shown
    headings = [i for i, line in enumerate(lines) if line.startswith("#")]
    priorities = [(1 + 2 * (len(lines[i]) - len(lines[i].lstrip("#"))), i) for i in headings]
    priorities += [  # a section's first line; a list of names it cut short ranks after the complete ones
        (9 if _PARTIAL.match(lines[i + 1]) else 8, i + 1)
        for i in headings
        if i + 1 < len(lines) and not lines[i + 1].startswith("#")
    ]
    priorities += [(1, headings[-1])] if headings else []
    priorities += [(10 + 3 * n, n) for n in range(min(len(lines), 30))]
    priorities += [(11 + 4 * n, len(lines) - 1 - n) for n in range(min(len(lines), 10))]
    header = f"[HTML page as text: {title}]" if title else "[HTML page as text]"
    footer = (
        f"[{len(headings)} headings{_items(body)}; text from {len(page):,} chars of HTML; {where(pointer)}]"
    )
    return pick_lines(lines, budget, priorities, gaps=False, header=header, footer=footer, max_line=200)
