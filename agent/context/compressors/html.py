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

__all__ = ["compress_html", "html_to_lines", "is_html"]

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
_HEAD_START = re.compile(r"^\s*(?:<!doctype html|<html\b|<\?xml[^>]*>\s*<html\b)", re.IGNORECASE)
_TAGS = re.compile(r"<(?:div|span|p|a|body|table|tr|td|li|ul|h[1-6]|meta|link|script|br)\b", re.IGNORECASE)
_TROUBLE = r"(?:error|not found|forbidden|unauthorized|unavailable|denied|gateway|timeout|too many requests)"
_ERROR_PAGE = re.compile(
    rf"\b(?:[45]\d\d\b.*?{_TROUBLE}|{_TROUBLE}.*?\b[45]\d\d)\b", re.IGNORECASE | re.DOTALL
)


def is_html(text: str) -> bool:
    head = text[:2000]
    return bool(_HEAD_START.match(head)) or len(_TAGS.findall(head)) >= 8


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
        body = _TITLED.sub(lambda m: f"<h3>{m.group(2)}</h3>", body)
    return body


def _lines(fragment: str) -> list[str]:
    """Cleaned HTML as text lines; headings become `#`-prefixed lines."""
    body = _HEADING.sub(lambda m: f"\n{'#' * int(m.group(1))} {_flat(m.group(2))}\n", fragment)
    body = _BLOCK.sub("\n", body)
    body = html.unescape(_TAG.sub("", body)).replace("\u00b6", "").replace("\u00a7", "")  # permalink marks
    body = _SPACE.sub(" ", body)
    lines: list[str] = []
    for raw in body.split("\n"):
        line = raw.strip()
        if line and (not lines or line != lines[-1]):
            lines.append(line)
    return lines


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
    for found in _HEADING.finditer(body, cut_head, cut_tail):
        text = html.unescape(_flat(found.group(2))).replace("\u00b6", "").replace("\u00a7", "").strip()
        if text:
            lines.append(f"{'#' * int(found.group(1))} {text}")
    return lines + _lines(body[cut_tail:])


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
        lines = _windowed(body, 12 * budget, 4 * budget)
    headings = [i for i, line in enumerate(lines) if line.startswith("#")]
    priorities = [(1 + 2 * (len(lines[i]) - len(lines[i].lstrip("#"))), i) for i in headings]
    priorities += [(8, i + 1) for i in headings if i + 1 < len(lines) and not lines[i + 1].startswith("#")]
    priorities += [(1, headings[-1])] if headings else []
    priorities += [(10 + 3 * n, n) for n in range(min(len(lines), 30))]
    priorities += [(11 + 4 * n, len(lines) - 1 - n) for n in range(min(len(lines), 10))]
    header = f"[HTML page as text: {title}]" if title else "[HTML page as text]"
    footer = f"[{len(headings)} headings; text from {len(page):,} chars of HTML; {where(pointer)}]"
    return pick_lines(lines, budget, priorities, gaps=False, header=header, footer=footer, max_line=200)
