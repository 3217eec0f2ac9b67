"""The stack file's JSON Schema (draft 2020-12), generated from the declarations the validator reads.

Editors read it through the YAML language server (`# yaml-language-server: $schema=...` on a stack's first line):
completion, descriptions, and inline errors for unknown keys, wrong types, unknown values and out-of-range
numbers. It is shipped next to this module as `SCHEMA_FILE` (`python -m gpushare schema > <that file>` rewrites
it; a test keeps the two equal).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gpushare.model.keys import NS
from gpushare.stackfile.config import CONFIG
from gpushare.stackfile.declarations import ARRAY, OBJECT, Field, Section, json_default
from gpushare.stackfile.files import PULUMI_STACK_FIELDS

SCHEMA_FILE = Path(__file__).with_name("stack-file.schema.json")
DRAFT = "https://json-schema.org/draft/2020-12/schema"
DESCRIPTION = (
    "A Pulumi stack file of a gpushare project (stacks/Pulumi.<stack>.yaml). Generated from the declarations "
    "gpushare's validator reads: keys, types, enums, defaults, patterns and bounds. Rules that relate keys to each "
    "other stay in the validator, which `gpushare plan STACK` (and every `pulumi preview`/`up`) runs: for example a "
    "MIG profile on a size without MIG, count together with autoscale, mps on a MIG pool or under migStrategy "
    "mixed, a tenant's pools and quota resources, duplicate pool or tenant names, the region's cloud."
)
STACK_FILE = Section((
    Field("config", OBJECT, "The stack's configuration: gpushare's keys and the azure-native settings it reads; "
                            "other providers' keys (<namespace>:<key>) are passed through.",
          required=True, section=CONFIG),
    *PULUMI_STACK_FIELDS,
))


NOT_PORTABLE = ("(?P=", "(?=", "(?!", "(?<=", "(?<!", "\\A", "\\Z", "(?i", "(?x", "(?s", "(?m", "(?a", "(?L", "(?u")
"""Regular-expression syntax that one of the engines validators use lacks: Python-only backreferences, anchors and
inline flags, lookaround (not in Go's RE2). A declared pattern must not use it (`portable_pattern` refuses)."""
NAMED_GROUP = re.compile(r"\(\?P<\w+>")
BACKREFERENCE = re.compile(r"\\[1-9]")


def portable_pattern(compiled: re.Pattern[str]) -> str:
    """A validator pattern as JSON Schema writes it, in the syntax every common engine reads: ECMA-262 (JSON Schema
    2020-12 section 6.4; ajv, the YAML language server, check-jsonschema's default), Python's `re` (the jsonschema
    package, `check-jsonschema --regex-variant python`) and Go's RE2. Named groups have no spelling all three read
    (Python wants `(?P<name>...)`, which ECMA-262 refuses; ECMA's `(?<name>...)` Python refuses), so they become
    plain groups: the schema only matches, it never reads a group. JSON Schema has no flags, so under
    re.IGNORECASE each ASCII letter outside an escape becomes both cases (`[sS]`, in a class `a-f` -> `a-fA-F`)."""
    pattern = compiled.pattern
    assert not any(token in pattern for token in NOT_PORTABLE), f"not portable: {pattern}"
    assert not BACKREFERENCE.search(pattern), f"a backreference (not in RE2): {pattern}"
    pattern = NAMED_GROUP.sub("(", pattern)
    return _both_cases(pattern) if compiled.flags & re.IGNORECASE else pattern


def _both_cases(pattern: str) -> str:
    out, i, in_class = [], 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        elif char.isascii() and char.isalpha():
            if in_class and pattern[i + 1:i + 2] == "-" and pattern[i + 2:i + 3].isalpha():
                low, high = char, pattern[i + 2]
                out.append(f"{low.lower()}-{high.lower()}{low.upper()}-{high.upper()}")
                i += 3
                continue
            out.append(f"{char.lower()}{char.upper()}" if in_class else f"[{char.lower()}{char.upper()}]")
            i += 1
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _section_schema(section: Section) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {f.name: field_schema(f) for f in section.fields}}
    required = [f.name for f in section.fields if f.required]
    if required:
        schema["required"] = required
    if section.closed:
        schema["additionalProperties"] = False
    return schema


def _value_schema(field: Field) -> dict[str, Any]:
    if field.section is not None and field.values is not None:
        # Fixed keys beside free ones (a tenant's `quota`: `pools` and resource names).
        return {**_section_schema(field.section), "additionalProperties": field_schema(field.values, element=True)}
    if field.section is not None:
        return _section_schema(field.section)
    if field.values is not None:
        return {"type": OBJECT, "additionalProperties": field_schema(field.values, element=True)}
    if field.type == ARRAY:
        assert field.items is not None, field.name
        schema: dict[str, Any] = {"type": ARRAY, "items": field_schema(field.items, element=True)}
        for key, value in (("minItems", field.min_items), ("maxItems", field.max_items)):
            if value is not None:
                schema[key] = value
        if field.unique:
            schema["uniqueItems"] = True
        return schema
    schema = {"type": field.type}
    if field.enum_values:
        schema["enum"] = list(field.enum_values)
    if field.pattern is not None:
        schema["pattern"] = portable_pattern(field.pattern)
    for key, value in (("minimum", field.minimum), ("maximum", field.maximum),
                       ("exclusiveMinimum", field.exclusive_minimum)):
        if value is not None:
            schema[key] = value
    return schema


def field_schema(field: Field, element: bool = False) -> dict[str, Any]:
    """A key's schema; `element`: a list's item or a free mapping's value, which is there or not (no default, and
    the validator refuses it empty)."""
    schema: dict[str, Any] = {"description": field.description if element else field.documentation}
    default = json_default(field.default)
    if default is not None and not element:
        schema["default"] = default
    if field.examples:
        schema["examples"] = list(field.examples)
    nullable = field.nullable and not element
    forms = [_value_schema(field), *field.also, *([{"type": "null"}] if nullable else [])]
    schema.update({"anyOf": forms} if len(forms) > 1 else forms[0])
    return schema


def stack_file_schema() -> dict[str, Any]:
    schema = {"$schema": DRAFT, "title": "gpushare stack file", "description": DESCRIPTION,
              **_section_schema(STACK_FILE)}
    gpushare_keys = [key for key in CONFIG.keys if key.startswith(f"{NS}:")]
    # Like the validator: every config key has a namespace, and a gpushare: key must be one gpushare declares.
    schema["properties"]["config"]["propertyNames"] = {"anyOf": [
        {"enum": gpushare_keys},
        {"pattern": ":", "not": {"pattern": f"^{NS}:"}},
    ]}
    return schema


def schema_text() -> str:
    """The schema as shipped in `SCHEMA_FILE` and printed by `gpushare schema`."""
    return json.dumps(stack_file_schema(), indent=2, ensure_ascii=False) + "\n"
