"""Errors a user can cause, reported the way compilers do: FILE:LINE:COL: error: ...

Every user-facing error derives from `UserError`; the CLI prints it without a
traceback and exits 1. `SourceError` adds a position and shows the offending line
with a caret under the column.
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in something the user wrote or passed: file, flag, data."""


class SourceError(UserError):
    kind = "error"

    def __init__(self, message: str, file: str, line: int, col: int, source: str | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.source = source

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def source_line(self) -> str | None:
        if self.source is None:
            return None
        lines = self.source.splitlines()
        if 1 <= self.line <= len(lines):
            return lines[self.line - 1]
        return None

    def __str__(self) -> str:
        out = f"{self.location}: error: {self.message}"
        text = self.source_line()
        if text is not None:
            shown, caret = _excerpt(text.expandtabs(1), max(self.col - 1, 0))
            out += f"\n  {shown}\n  {' ' * caret}^"
        return out


EXCERPT_WIDTH = 100


def _excerpt(line: str, at: int) -> tuple[str, int]:
    """At most EXCERPT_WIDTH characters of `line` around column `at` (0-based), with
    '...' where it was cut, and the caret's column in what is shown."""
    if len(line) <= EXCERPT_WIDTH:
        return line, at
    start = max(0, min(at - EXCERPT_WIDTH // 2, len(line) - EXCERPT_WIDTH))
    shown = line[start : start + EXCERPT_WIDTH]
    caret = at - start
    if start > 0:
        shown, caret = "..." + shown, caret + 3
    if start + EXCERPT_WIDTH < len(line):
        shown += "..."
    return shown, caret


def closest_name(name: str, candidates: list[str]) -> str | None:
    """The candidate a misspelt `name` most likely meant (difflib's closest; among
    equally close ones, the one sharing the longest prefix: 'ad' -> 'add', not 'pad')."""
    import difflib

    close = difflib.get_close_matches(name, candidates, n=5)

    def key(c: str) -> tuple[float, int]:
        ratio = difflib.SequenceMatcher(None, name, c).ratio()
        pairs = zip(name, c, strict=False)
        prefix = next((k for k, (a, b) in enumerate(pairs) if a != b), min(len(name), len(c)))
        return (-round(ratio, 9), -prefix)

    return min(close, key=key, default=None)
