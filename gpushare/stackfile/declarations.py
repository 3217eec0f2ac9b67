"""Declarations of the stack file's keys: one `Field` per key, one `Section` per mapping.

The validator reads them (a section's allowed keys, a key's type, enum, pattern, bounds and default) and
`gpushare.stackfile.schema` turns them into the JSON Schema editors use, so the two cannot drift. Rules that relate
keys to each other (a MIG profile on a size without MIG, a tenant's pools, count and autoscale together) stay in the
section's parse function.

Adding a key to a section is adding one `Field` to its `Section` (in the section's module, in the order messages
list the keys): the validator then allows it and the schema describes it. The parse function reads it with
`c.field(raw, SECTION["key"], path)` when the declaration says all there is to check (an enum, a boolean, bounded
integer, a string pattern), or with its own code for anything more (the Field still gives the schema its type).
A nested mapping is `Field(name, OBJECT, ..., section=Section((...)))`, a mapping of free keys (labels, a quota)
`values=Field(...)`, a free-form one (Helm values) OBJECT alone, a list `Field(name, ARRAY, ..., items=Field(...))`.
`also=` lists other forms the validator accepts (a YAML number for a quoted one), `empty_is_default=False` marks a
key the validator refuses empty. Then regenerate the shipped schema and the key reference
(`gpushare.stackfile.reference`): `python -m gpushare schema > gpushare/stackfile/stack-file.schema.json` and
`python -m gpushare schema --markdown > docs/config-reference.md`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

STRING, INTEGER, BOOLEAN, OBJECT, ARRAY = "string", "integer", "boolean", "object", "array"
"""A key's type, named as JSON Schema names it. An OBJECT has a `section` (fixed keys), `values` (free keys, each
value alike) or neither (any mapping)."""


@dataclass(frozen=True)
class Field:
    """One key: what it holds and what the validator accepts for it."""

    name: str
    type: str
    description: str
    """The key's rule, in words; "Required." or "Optional. Default: X." is put before it (`documentation`)."""
    required: bool = False
    default: Any = None
    """What the model gets when the key is absent (an Enum member, a number, ...); None: no default, or one that
    depends on other keys (then `default_text` says it)."""
    default_text: str | None = None
    enum: type[Enum] | tuple[str, ...] | None = None
    pattern: re.Pattern[str] | None = None
    examples: tuple[Any, ...] = ()
    """Valid values, shown by editors (and written by the schema tests) where a pattern alone does not say."""
    rule: str = ""
    """A pattern's rule as the validator's message words it ("must be 1-63 letters, ...")."""
    minimum: int | None = None
    maximum: int | None = None
    why: str = ""
    """Why the bounds are what they are, as the validator's message adds it (" (AKS ...)")."""
    section: Section | None = None
    """An OBJECT's keys."""
    values: Field | None = None
    """An OBJECT with free keys (a quota: resource -> units): what each value holds."""
    items: Field | None = None
    """An ARRAY's items (an item is never optional: its `required` is not read, and it cannot be empty)."""
    min_items: int | None = None
    max_items: int | None = None
    unique: bool = False
    """An ARRAY whose items may not repeat (the validator reports "listed twice")."""
    also: tuple[dict[str, Any], ...] = ()
    """Other forms the validator accepts, as JSON Schema (YAML's number for a zone, `false` for an unquoted off)."""
    empty_is_default: bool = True
    """An optional key left empty (YAML `key:` with nothing after it, null) takes the default; False where the
    validator refuses it (`sharing:` with its keys not indented under it)."""

    @property
    def nullable(self) -> bool:
        return self.empty_is_default and not self.required

    @property
    def enum_values(self) -> tuple[str, ...]:
        if self.enum is None:
            return ()
        if isinstance(self.enum, tuple):
            return self.enum
        return tuple(member.value for member in self.enum)

    @property
    def documentation(self) -> str:
        """AVM style: "Required. <rule>" or "Optional. Default: <default>. <rule>"."""
        if self.required:
            return f"Required. {self.description}"
        shown = self.default_text or _written(json_default(self.default))
        return f"Optional. Default: {shown}. {self.description}" if shown else f"Optional. {self.description}"


def _written(default: Any) -> str | None:
    """A default as a stack file writes it: `true`, `4`, `Standard`; an empty list is none."""
    if default is None or isinstance(default, str):
        return default
    return "none" if default == [] else json.dumps(default)


def json_default(value: Any) -> Any:
    """A model default as the stack file writes it (Enum members by value, tuples as lists); None: none."""
    if value is None:
        return None
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [json_default(item) for item in value]
    return value


@dataclass(frozen=True)
class Section:
    """A mapping with fixed keys: the validator refuses any other key (`Checker.mapping`)."""

    fields: tuple[Field, ...]
    closed: bool = True
    """False for the stack's `config:`, which also holds other providers' keys."""
    by_name: dict[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {f.name: f for f in self.fields})
        assert len(self.by_name) == len(self.fields), f"a key is declared twice in {self.keys}"

    @property
    def keys(self) -> tuple[str, ...]:
        """The allowed keys, in the order messages list them."""
        return tuple(f.name for f in self.fields)

    def __getitem__(self, name: str) -> Field:
        return self.by_name[name]
