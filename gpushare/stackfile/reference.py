"""The stack file's key reference in Markdown (`docs/config-reference.md`), generated from the declarations the
validator and the JSON Schema read, so the reference cannot drift from either.

`gpushare schema --markdown > docs/config-reference.md` rewrites it; a test keeps the two equal. What the
declarations do not say (how keys work together, examples, why a default is what it is) is on the hand-written
page it links to, `docs/stack-file.md`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from gpushare.stackfile.config import CONFIG
from gpushare.stackfile.declarations import ARRAY, Field, Section

LISTED_VALUES = 12
"""More allowed values than this (the regions, the catalog's sizes) are counted, not listed: `gpushare schema`
lists them all."""

HEADER = """\
# Config reference: every key

Generated from gpushare's key declarations (`gpushare/stackfile/declarations.py` and the section modules) by
`gpushare schema --markdown > docs/config-reference.md`; a test fails while it is stale. The same declarations give
the validator its keys, types, allowed values and bounds, and `gpushare schema` its JSON Schema. Rules that relate
keys to each other, the smallest stack, examples and the why of many defaults are in the hand-written
[config guide](stack-file.md).

`[]` marks a list's items, `.<key>` a mapping's free keys (labels, a quota's resources).

| key | type | description | allowed |
| --- | --- | --- | --- |
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(value: object) -> str:
    return f"`{value}`".replace("|", "\\|")


def _allowed(field: Field) -> str:
    parts = []
    values = field.enum_values
    if len(values) > LISTED_VALUES:
        parts.append(f"one of {len(values)} values (`gpushare schema` lists them)")
    elif values:
        parts.append(", ".join(_code(value) for value in values))
    if field.rule:
        parts.append(_cell(field.rule))
    elif field.pattern is not None and not values:
        parts.append(f"pattern {_code(field.pattern.pattern)}")
    if field.exclusive_minimum is not None:
        parts.append(f"{field.exclusive_minimum} < value")
    parts.extend(f"or {_code(json.dumps(form['const']))}" for form in field.also if "const" in form)
    if field.minimum is not None or field.maximum is not None:
        low = "" if field.minimum is None else f"{field.minimum} <= "
        high = "" if field.maximum is None else f" <= {field.maximum}"
        parts.append(f"{low}value{high}")
    if field.type == ARRAY:
        if field.min_items is not None:
            parts.append(f"at least {field.min_items} item{'s' if field.min_items != 1 else ''}")
        if field.max_items is not None:
            parts.append(f"at most {field.max_items} items")
        if field.unique:
            parts.append("no item twice")
    return "; ".join(parts)


def _type(field: Field) -> str:
    if field.type == ARRAY and field.items is not None:
        return f"list of {field.items.type}"
    if field.values is not None:
        return f"mapping of {field.values.type}"
    return field.type


def _rows(section: Section, prefix: str) -> Iterator[str]:
    for field in section.fields:
        key = f"{prefix}{field.name}"
        yield f"| {_code(key)} | {_type(field)} | {_cell(field.documentation)} | {_allowed(field)} |\n"
        if field.section is not None:
            yield from _rows(field.section, f"{key}.")
        if field.items is not None:
            item = field.items
            if item.section is not None:
                yield from _rows(item.section, f"{key}[].")
            elif _allowed(item):
                yield f"| {_code(key + '[]')} | {item.type} | {_cell(item.description)} | {_allowed(item)} |\n"
        if field.values is not None:
            value = field.values
            if value.section is not None:
                yield from _rows(value.section, f"{key}.<key>.")
            else:
                yield (f"| {_code(key + '.<key>')} | {value.type} | {_cell(value.description)} "
                       f"| {_allowed(value)} |\n")


def reference_markdown(config: Section = CONFIG) -> str:
    """The page as committed in `docs/config-reference.md` and printed by `gpushare schema --markdown`: one row per
    key of `config` (the stack's `config:` section), nested keys after their parent."""
    return HEADER + "".join(_rows(config, ""))
