"""Words of tool text, as BM25 and the tool graph compare them.

Tool names are identifiers (`crm_update_deal_stage`, `getPullRequestDiff`), so they are
split at underscores, dashes, dots and camelCase humps before anything else; a query
saying "pull request" then meets `github_get_pull_request_diff`. Words are lower-cased,
common English glue words dropped, and the rest stemmed (Snowball's English stemmer, from
the `toolsearch` extra; without it words are kept whole) so "refunds", "refunded" and
"refund" are one term. One function serves both sides: a query and a tool must be cut
into words the same way or they never meet.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

__all__ = ["STOPWORDS", "split_identifier", "stem", "words", "wordset"]


def wordset(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text`, as a set (for word lists written as text)."""
    return frozenset(text.split())


STOPWORDS = wordset(
    """a an and are as at be by can do does for from has have how i if in into is it its
    me my of on or our please show so that the their them then these this those to up us
    was we what when where which who will with would you your"""
)

_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z0-9]+")


def split_identifier(text: str) -> list[str]:
    """`getPullRequestDiff` / `get_pull_request-diff` -> ['get', 'pull', 'request', 'diff']."""
    return [part.lower() for token in _WORD.findall(text) for part in _HUMP.split(token) if part]


@functools.lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    """Snowball's English stemmer, imported on first use (the core never loads the extra)."""
    try:
        import snowballstemmer  # type: ignore[import-untyped]
    except ImportError:  # the extra is not installed: whole words still match
        return lambda word: word
    english = snowballstemmer.stemmer("english")
    return functools.lru_cache(maxsize=65536)(english.stemWord)


def stem(word: str) -> str:
    """The word's stem (the word itself without the `toolsearch` extra)."""
    return _stemmer()(word)


def words(text: str | Iterable[str]) -> list[str]:
    """Stemmed content words of `text` (or of several texts), in order, repeats kept."""
    parts = [text] if isinstance(text, str) else list(text)
    return [stem(w) for part in parts for w in split_identifier(part) if w not in STOPWORDS]
