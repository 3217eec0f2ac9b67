"""Declarations of the stack file's keys: one `Field` per key, one `Section` per mapping.

The validator reads a whole section from them (`Checker.section`: the allowed keys, the required ones, each key's
type, enum, pattern, bounds, items and uniqueness, and the default, which comes from the section's model class),
`gpushare.stackfile.schema` turns them into the JSON Schema editors use and `gpushare.stackfile.reference` into
docs/config-reference.md, so the three cannot drift. Rules that relate keys to each other (a MIG profile on a size
without MIG, a tenant's pools, count and autoscale together) are named rule functions in the section's module.

Adding a key to a section is adding one `Field` to its `Section` (in the section's module, in the order messages
list the keys) and, for a section with a `model`, the attribute to that model class (`gpushare.model.stack`), whose
default is the key's default: `Checker.section` then checks it and the model gets its value. A key whose check the
declaration cannot say (a catalog lookup, a value that depends on another key) gets a rule function in
`Checker.section`'s `rules` (the Field still gives the schema and the reference its type).
A nested mapping is `Field(name, OBJECT, ..., section=Section((...)))`, a mapping of free keys (labels, a quota)
`values=Field(...)`, a free-form one (Helm values) OBJECT alone, a list `Field(name, ARRAY, ..., items=Field(...))`.
`also=` lists other forms the validator accepts (a YAML number for a quoted one), `empty_is_default=False` marks a
key the validator refuses empty. Then regenerate the shipped schema and the key reference
(`gpushare.stackfile.reference`): `python -m gpushare schema > gpushare/stackfile/stack-file.schema.json` and
`python -m gpushare schema --markdown > docs/config-reference.md`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

STRING, INTEGER, NUMBER, BOOLEAN, OBJECT, ARRAY = "string", "integer", "number", "boolean", "object", "array"
"""A key's type, named as JSON Schema names it. An OBJECT has a `section` (fixed keys), `values` (free keys, each
value alike), both (fixed keys beside free ones: a tenant's `quota`) or neither (any mapping)."""


@dataclass(frozen=True)
class Field:
    """One key: what it holds and what the validator accepts for it."""

    name: str
    type: str
    description: str
    """The key's rule, in words; "Required." or "Optional. Default: X." is put before it (`documentation`)."""
    required: bool = False
    missing: str = ""
    """What a missing required key's message says it holds ("required: <missing>"); default: its allowed values,
    else its description."""
    default: Any = None
    """What the model gets when the key is absent (an Enum member, a number, ...); None: no default, or one that
    depends on other keys (then `default_text` says it). In a section with a `model`, the model's attribute
    default is the key's (`Section`)."""
    default_text: str | None = None
    enum: type[Enum] | tuple[str, ...] | None = None
    pattern: re.Pattern[str] | None = None
    examples: tuple[Any, ...] = ()
    """Valid values, shown by editors (and written by the schema tests) where a pattern alone does not say."""
    rule: str = ""
    """A pattern's rule as the validator's message words it ("must be 1-63 letters, ...")."""
    minimum: int | float | None = None
    maximum: int | float | None = None
    exclusive_minimum: int | float | None = None
    """A NUMBER that must be above this."""
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
    attr: str | None = None
    """The model attribute that holds the key's value; None: the key in snake_case, "": none (the pool's `gpu:`,
    which its `vmSize` reads)."""

    @property
    def model_attr(self) -> str:
        if self.attr is not None:
            return self.attr
        return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: f"_{m.group(1).lower()}", self.name)

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
    model: type | None = None
    """The dataclass `Checker.section` builds from the section's values (each Field's `model_attr`); its attribute
    defaults are the keys' defaults, written only there."""
    by_name: dict[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.model is not None:
            object.__setattr__(self, "fields", tuple(_with_model_default(f, self.model) for f in self.fields))
        object.__setattr__(self, "by_name", {f.name: f for f in self.fields})
        assert len(self.by_name) == len(self.fields), f"a key is declared twice in {self.keys}"

    @property
    def keys(self) -> tuple[str, ...]:
        """The allowed keys, in the order messages list them."""
        return tuple(f.name for f in self.fields)

    def __getitem__(self, name: str) -> Field:
        return self.by_name[name]


def _with_model_default(spec: Field, model: type) -> Field:
    """`spec` with its model attribute's default; a default declared on the Field too must be the same."""
    attributes = {f.name: f for f in dataclasses.fields(model)}
    attribute = attributes.get(spec.model_attr) if spec.model_attr else None
    assert spec.model_attr == "" or attribute is not None, f"{model.__name__} has no {spec.model_attr}"
    if attribute is None or attribute.default is dataclasses.MISSING or attribute.default is None:
        return spec
    if dataclasses.is_dataclass(attribute.default):
        return spec  # a nested section's model: its own keys carry the defaults
    assert spec.default in (None, attribute.default), f"{spec.name}: {spec.default!r} != the model's"
    return spec if spec.default_text else dataclasses.replace(spec, default=attribute.default)
