"""What every section's validation shares: a `Checker` that collects problems (so one run reports them all) and
reads a whole section from its declaration (`Checker.section`), and the wording of values in messages."""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from enum import Enum
from typing import Any, Callable, TypeVar

from gpushare.errors import ConfigProblem
from gpushare.model.keys import POOLS_KEY
from gpushare.stackfile.declarations import ARRAY, BOOLEAN, INTEGER, NUMBER, OBJECT, STRING, Field, Section

GUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
MAX_POOL_NODES = 1000
"""AKS's per-pool node limit."""
E = TypeVar("E", bound=Enum)
LISTED_CHOICES = 12
"""A missing key's message lists up to this many allowed values (not the catalog's sizes)."""
Rule = Callable[["Checker", Any, str], Any]
"""A key's own check, for what its declaration cannot say: (checker, value, path) -> the parsed value, or None with
the problems recorded."""


def show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else repr(value)


def kind_of(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a mapping", type(None): "empty"}.get(type(value), type(value).__name__)


def is_secure_value(value: Any) -> bool:
    """A Pulumi secret as a stack file holds it: `{secure: <ciphertext>}`."""
    return isinstance(value, dict) and set(value) == {"secure"} and isinstance(value["secure"], str)


def record_name_or_find_earlier(seen: dict[str, int], item: Any, index: int) -> int | None:
    """For list item `index`, a mapping: the index of an earlier item with the same raw `name`, else None (and the
    name is recorded as this item's). Read on the raw name, so a repeat shows even when the item has other problems."""
    name = item.get("name") if isinstance(item, dict) else None
    if not isinstance(name, str):
        return None
    if name in seen:
        return seen[name]
    seen[name] = index
    return None


def name_indexes(raw_items: Any) -> dict[str, int]:
    """Each raw list item's index by its `name`, for items whose name is a string: a name written as a list or
    mapping is reported where the item is parsed, and cannot index anything."""
    items = raw_items if isinstance(raw_items, list) else []
    return {item["name"]: i for i, item in enumerate(items)
            if isinstance(item, dict) and isinstance(item.get("name"), str)}


class Checker:
    """Collects problems instead of stopping at the first, so one run shows them all."""

    def __init__(self) -> None:
        self.problems: list[ConfigProblem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(ConfigProblem(path, message))

    def mapping(self, value: Any, path: str, allowed: tuple[str, ...],
                children: dict[str, tuple[str, ...]] | None = None) -> dict[str, Any] | None:
        """`children` names the nested mappings (`autoscale`: its keys): one of their keys found at this level was
        indented one step too little, and is reported as such rather than as a misspelling."""
        if not isinstance(value, dict):
            self.add(path, f"expected a mapping with keys {', '.join(allowed)}, got {kind_of(value)} {show(value)}")
            return None
        for key in value:
            if key in allowed:
                continue
            parent = next((name for name, keys in (children or {}).items() if key in keys), None)
            if parent:
                example = ", ".join(f"{child}: ..." for child in children[parent][:2])
                self.add(f"{path}.{key}", f"`{key}` is a key of `{parent}`, not of {path}: check the indentation, "
                                          f"{key} must be indented under `{parent}:` (or write "
                                          f"{parent}: {{{example}}})")
            else:
                self.add(f"{path}.{key}", f"unknown key{did_you_mean(str(key), allowed)}; allowed: {', '.join(allowed)}")
        return value

    def string(self, value: Any, path: str, pattern: re.Pattern[str], rule: str) -> str | None:
        if not isinstance(value, str):
            self.add(path, f"expected a string ({rule}), got {kind_of(value)} {show(value)}")
            return None
        if not pattern.match(value):
            self.add(path, f"{rule}, got {show(value)}")
            return None
        return value

    def integer(self, value: Any, path: str, minimum: int, maximum: int | None = None, why: str = "") -> int | None:
        bounds = f"from {minimum} to {maximum}" if maximum is not None else f"{minimum} or more"
        if isinstance(value, bool) or not isinstance(value, int):
            fix = "; write it without quotes" if isinstance(value, str) and value.strip().isdigit() else ""
            self.add(path, f"expected a whole number {bounds}, got {kind_of(value)} {show(value)}{fix}")
            return None
        if value < minimum or (maximum is not None and value > maximum):
            self.add(path, f"must be {bounds}{why}, got {value}")
            return None
        return value

    def boolean(self, value: Any, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.add(path, f"expected true or false, got {kind_of(value)} {show(value)}")
            return None
        return value

    def choice(self, value: Any, path: str, enum: type[E]) -> E | None:
        allowed = [member.value for member in enum]
        if isinstance(value, str):
            for member in enum:
                if member.value == value:
                    return member
            for member in enum:
                if member.value.lower() == value.lower():
                    self.add(path, f"unknown value {show(value)} (values are case-sensitive); write {member.value!r}")
                    return None
        self.add(path, f"unknown value {show(value)}{did_you_mean(str(value), allowed)}; allowed: {', '.join(allowed)}")
        return None

    def number(self, value: Any, path: str, spec: Field) -> float | None:
        low = spec.exclusive_minimum
        bounds = f"above {low}" if low is not None else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fix = "; write it without quotes" if isinstance(value, str) and _is_number(value) else ""
            self.add(path, f"expected {bounds}, got {kind_of(value)} {show(value)}{fix}")
            return None
        if low is not None and value <= low:
            self.add(path, f"must be {bounds}{spec.why}, got {value}")
            return None
        return value

    def items(self, value: Any, path: str, spec: Field) -> tuple[Any, ...] | None:
        """A list: each item checked against `spec.items`, a repeat of an earlier one reported where `unique`."""
        assert spec.items is not None, spec.name
        if not isinstance(value, list) or (spec.min_items and len(value) < spec.min_items):
            self.add(path, f"expected a list of at least {spec.min_items or 0} {spec.items.name}"
                           f"{'s' if spec.min_items != 1 else ''}, got {kind_of(value)} {show(value)}")
            return None
        parsed: list[Any] = []
        for i, item in enumerate(value):
            checked = self.check(spec.items, item, f"{path}[{i}]")
            if checked is None:
                continue
            if spec.unique and checked in parsed:
                self.add(f"{path}[{i}]", f"{spec.items.name} {show(checked)} is listed twice")
                continue
            parsed.append(checked)
        return tuple(parsed)

    def check(self, spec: Field, value: Any, path: str) -> Any:
        """`value` checked against its declaration (enum, type, pattern, bounds, items, nested keys); None when it
        fails."""
        if isinstance(spec.enum, type):
            return self.choice(value, path, spec.enum)
        if spec.enum:
            return self.one_of(value, path, spec.enum_values)
        if spec.type == BOOLEAN:
            return self.boolean(value, path)
        if spec.type == INTEGER and spec.minimum is not None:
            return self.integer(value, path, spec.minimum, spec.maximum, spec.why)
        if spec.type == NUMBER:
            return self.number(value, path, spec)
        if spec.type == STRING and spec.pattern is not None:
            return self.string(value, path, spec.pattern, spec.rule)
        if spec.type == ARRAY and spec.items is not None:
            return self.items(value, path, spec)
        if spec.type == OBJECT and spec.section is not None:
            return self.section(value, spec.section, path)
        raise TypeError(f"{path}: the declaration of {spec.name} says nothing to check; give it a rule "
                        f"(`Checker.section`'s rules)")

    def one_of(self, value: Any, path: str, allowed: tuple[str, ...]) -> str | None:
        if value in allowed:
            return value
        self.add(path, f"unknown value {show(value)}{did_you_mean(str(value), allowed)}; allowed: {', '.join(allowed)}")
        return None

    def section(self, value: Any, section: Section, path: str, rules: dict[str, Rule] | None = None,
                missing: dict[str, str] | None = None) -> Any:
        """A mapping read whole from its declaration: unknown keys, missing required ones, each key checked by its
        declaration or its rule in `rules`, every problem recorded. Returns the section's model built from the
        values (an absent or invalid key's default from the model), `SectionValues` where the section has no model,
        or None when the value is no mapping or a required key is missing or invalid."""
        values = self.section_values(value, section, path, rules, missing)
        if values is None or values.incomplete:
            return None
        return values.model() if section.model is not None else values

    def section_values(self, value: Any, section: Section, path: str, rules: dict[str, Rule] | None = None,
                       missing: dict[str, str] | None = None) -> SectionValues | None:
        """`section` without building the model: each key's value (or default), and which keys failed, for rules
        that relate keys to each other before the model is built. `missing`: what a required key holds where the
        stack decides it (the pools a tenant may list), instead of its declaration's `missing`."""
        # A nested mapping's key found at this level lost its indentation.
        children = {f.name: f.section.keys for f in section.fields if f.section is not None}
        raw = self.mapping(value, path, section.keys, children=children)
        if raw is None:
            return None
        values = SectionValues(section, raw)
        for spec in section.fields:
            where = f"{path}.{spec.name}"
            values[spec.name] = spec.default
            if spec.name not in raw:
                if spec.required:
                    self.add(where, f"required: {(missing or {}).get(spec.name) or _missing(spec)}")
                    values.failed.add(spec.name)
                continue
            given = raw[spec.name]
            if given is None and not spec.required and spec.empty_is_default:
                continue
            if given is None and not spec.required and spec.section is not None:
                # `sharing:` with its keys not indented under it: YAML reads it as null and the keys as ours.
                keys = spec.section.keys
                self.add(where, f"is empty (YAML reads `{spec.name}:` with nothing indented under it as null); "
                                f"indent {', '.join(keys[:2])} under it, or remove `{spec.name}:`")
                continue
            values.given.add(spec.name)
            rule = (rules or {}).get(spec.name)
            parsed = rule(self, given, where) if rule is not None else self.check(spec, given, where)
            if parsed is None:
                values.failed.add(spec.name)
            else:
                values[spec.name] = parsed
        return values


def checked_later(c: Checker, value: Any, path: str) -> Any:
    """The rule of a key whose check needs the section's other keys (a tenant's quota needs its pools): the value
    as written, which the section's function checks once `section_values` has read the rest."""
    return value


class SectionValues(dict[str, Any]):
    """A section's values by key: the parsed value, else the default (absent, empty or invalid)."""

    def __init__(self, section: Section, raw: dict[str, Any]) -> None:
        super().__init__()
        self.section = section
        self.raw = raw
        """The mapping as the stack file wrote it."""
        self.given: set[str] = set()
        """Keys the stack file wrote (not empty)."""
        self.failed: set[str] = set()
        """Keys missing while required, or given and invalid (their problem is recorded)."""

    @property
    def incomplete(self) -> bool:
        """A required key is missing or invalid: the model cannot be built."""
        return any(self.section[name].required for name in self.failed)

    def model(self, **extra: Any) -> Any:
        """The section's model from these values (`extra` for attributes the keys do not give directly)."""
        model = self.section.model
        assert model is not None
        has_default = {f.name for f in dataclasses.fields(model)
                       if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}
        attributes = {f.model_attr: self[f.name] for f in self.section.fields if f.model_attr}
        # An absent key without a declared default leaves the model's own (a nested model's defaults).
        attributes = {a: v for a, v in attributes.items() if v is not None or a not in has_default}
        return model(**{**attributes, **extra})


def _missing(spec: Field) -> str:
    if spec.missing:
        return spec.missing
    if spec.enum_values and len(spec.enum_values) <= LISTED_CHOICES:
        return f"one of {', '.join(spec.enum_values)}"
    return spec.description[:1].lower() + spec.description[1:]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def did_you_mean(word: str, candidates: tuple[str, ...] | list[str]) -> str:
    lowered = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[match[0]]!r}?)" if match else ""


def parse_if_set(raw: dict[str, Any], key: str, parse: Callable[[Any], Any], default: Any) -> Any:
    """Parse `raw[key]` when present; a parse that failed (None) falls back to the default for later checks."""
    if key not in raw or raw[key] is None:
        return default
    parsed = parse(raw[key])
    return default if parsed is None else parsed


def pool_references(c: Checker, items: list[Any], path: str, pool_names: list[str]) -> tuple[list[str], bool]:
    """A list of pool names (a tenant's or a platform namespace's `pools`): the known ones, each once, and whether
    every item names a pool; an unknown name (with the closest) and a repeat are reported at their index."""
    pools: list[str] = []
    known = True
    for i, pool in enumerate(items):
        if pool not in pool_names:
            c.add(f"{path}[{i}]", f"unknown pool {show(pool)}{did_you_mean(str(pool), pool_names)}; "
                                  f"pools in {POOLS_KEY}: {', '.join(pool_names)}")
            known = False
        elif pool in pools:
            c.add(f"{path}[{i}]", f"pool {pool!r} is listed twice")
        else:
            pools.append(pool)
    return pools, known
