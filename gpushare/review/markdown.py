"""GitHub-flavoured Markdown for PR comments: escaped table cells, and a body that fits a size limit.

GitHub rejects a comment body over 65,536 characters. `fit` keeps the head (summary, errors, GPU table) whole and
drops detail lines from the end until the body fits, saying how many it left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

GITHUB_COMMENT_LIMIT = 65_536
DEFAULT_MAX_CHARS = 60_000
"""Under GitHub's limit, with room for the workflow's hidden marker and a footer."""


def cell(text: object) -> str:
    """One table cell: pipes escaped, line breaks as <br>, so a value never breaks the table."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def code(text: object) -> str:
    """Inline code that survives backticks in the value."""
    value = str(text)
    fence = "``" if "`" in value else "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return lines


def fence(text: str) -> list[str]:
    """A fenced block whose fence is longer than any run of backticks inside `text`."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marker = "`" * max(3, longest + 1)
    return [marker, *text.rstrip("\n").splitlines(), marker]


def fit(head: list[str], summary: str, items: list[str], max_chars: int, footer: list[str] = ()) -> str:
    """`head`, then `items` in a collapsed <details> titled `summary`, then `footer`, in at most `max_chars`.

    Items are dropped from the end first (callers put the least important last); the head and footer are never
    cut unless they alone exceed the limit, and then the text is cut hard with a note (the result still fits).
    """
    head_text = "\n".join(head).rstrip("\n")
    footer_text = "\n".join(footer).strip("\n")

    def body(kept: int) -> str:
        parts = [head_text]
        if items:
            shown = items[:kept]
            left = len(items) - kept
            detail = [f"<details><summary>{summary}</summary>", "", *shown]
            if left:
                detail += ["", f"_{left} more not shown: the comment is limited to {max_chars:,} characters. "
                               f"The full preview is in the workflow run's log._"]
            detail += ["", "</details>"]
            parts.append("\n".join(detail))
        if footer_text:
            parts.append(footer_text)
        return "\n\n".join(parts) + "\n"

    low, high = 0, len(items)
    if len(body(high)) <= max_chars:
        return body(high)
    # The largest number of items that fits: body length grows with `kept`.
    while low < high:
        middle = (low + high + 1) // 2
        if len(body(middle)) <= max_chars:
            low = middle
        else:
            high = middle - 1
    text = body(low)
    if len(text) <= max_chars:
        return text
    note = "\n\n_Cut here: the summary alone exceeds the size limit._\n"
    return text[: max(0, max_chars - len(note))] + note
