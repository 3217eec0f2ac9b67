"""Reading the policies' CEL from this package's YAML files and filling in a policy's data.

A string in the files may spread over several lines: its lines are stripped and joined with single spaces, so an
expression can be broken wherever it has a space and indented to show its structure. `${name}` names a fragment
(fragments.yaml) or a value the policy builder passes in (a tenant's name, its pools). A value inside a CEL string
literal is escaped for that literal (JSON's escapes in "...", a backslash before ' and \\ in '...'); outside one it is
CEL the builder wrote (a list literal, a map). A name nothing defines, or both a fragment and a value, is an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import Any

import yaml

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z][A-Za-z0-9]*)\}")


def joined(text: str) -> str:
    """A string of the files as it is assembled: its lines stripped and joined with single spaces."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


@cache
def load(name: str) -> Any:
    """One of this package's YAML files, every string in it `joined`."""
    def join_all(node: Any) -> Any:
        if isinstance(node, str):
            return joined(node)
        if isinstance(node, list):
            return [join_all(item) for item in node]
        if isinstance(node, dict):
            return {key: join_all(value) for key, value in node.items()}
        return node
    return join_all(yaml.safe_load(files(__package__).joinpath(name).read_text(encoding="utf-8")))


class _Quotes:
    """Which CEL string literal is open where in `text`, read once from left to right as `fill` asks for ever
    later positions (reading from the start each time was quadratic in a template's length)."""

    def __init__(self, text: str) -> None:
        self._text, self._i, self._quote = text, 0, ""

    def at(self, end: int) -> str:
        """The quote of the literal open at `end` ('' outside any); `end` no smaller than the last one asked."""
        text, i, quote = self._text, self._i, self._quote
        while i < end:
            char = text[i]
            if quote:
                if char == "\\":
                    i += 1
                elif char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            i += 1
        self._i, self._quote = i, quote
        return quote


def _escaped(value: str, quote: str) -> str:
    if quote == '"':
        return json.dumps(value)[1:-1]
    if quote == "'":
        return value.replace("\\", "\\\\").replace("'", "\\'")
    return value


def fill(template: str, values: Mapping[str, str], *, cel: bool = True, partial: bool = False) -> str:
    """`template` with each `${name}` replaced by `values[name]`, fragments first (recursively). `cel`: the template
    is CEL, so a value inside a string literal is escaped for it; otherwise (a message) values go in as they are.
    `partial`: leave names `values` lacks for a later fill."""
    fragments = load("fragments.yaml")
    quotes = _Quotes(template)
    out, last = [], 0
    for match in _PLACEHOLDER.finditer(template):
        name = match.group(1)
        out.append(template[last:match.start()])
        last = match.end()
        if name in values:
            if name in fragments:
                raise KeyError(f"admission policy CEL: ${{{name}}} is both a fragment and a value of this policy")
            value = values[name]
            out.append(_escaped(value, quotes.at(match.start())) if cel else value)
        elif name in fragments:
            out.append(fill(fragments[name], values, cel=cel, partial=partial))
        elif partial:
            out.append(match.group(0))
        else:
            raise KeyError(f"admission policy CEL: ${{{name}}} is neither a fragment nor a value of this policy")
    out.append(template[last:])
    return "".join(out)
