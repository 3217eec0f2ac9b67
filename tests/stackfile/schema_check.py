"""Every stack the validator accepts anywhere in the suite must also pass the JSON Schema, with JSON Schema's own
regular expressions (ECMA-262), or editors would mark a good stack as wrong. `tests/conftest.py` makes `accepted_stacks_pass_the_schema` autouse for every test."""

from __future__ import annotations

import json
import sys
from functools import cache
from typing import Any

import jsonschema
import pytest
import regress

from gpushare.stackfile import config
from gpushare.stackfile.schema import stack_file_schema


@cache
def _ecma(pattern: str) -> regress.Regex:
    return regress.Regex(pattern, flags="u")


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]):
    """`pattern` as JSON Schema defines it (ECMA-262, unicode mode), with check-jsonschema's own engine (regress),
    not Python's `re`: what editors and ajv apply."""
    if validator.is_type(instance, "string") and _ecma(pattern).find(instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


ECMA_VALIDATOR = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _ecma_pattern})


@cache
def schema_validator() -> jsonschema.Draft202012Validator:
    return ECMA_VALIDATOR(stack_file_schema())


def schema_problems(document: Any) -> list[str]:
    """What the schema refuses in a stack file's document, as `path: message` lines."""
    return [f"{'.'.join(map(str, error.absolute_path)) or '(file)'}: {error.message}"
            for error in schema_validator().iter_errors(document)]


_binding: dict[str, Any] = {"modules": [], "scanned": 0}


def _modules_binding(original: Any) -> list[Any]:
    """The modules holding `parse_config` as a global, rescanned only when a module was imported since."""
    if len(sys.modules) != _binding["scanned"]:
        _binding["modules"] = [module for module in list(sys.modules.values())
                               if getattr(module, "__dict__", {}).get("parse_config") is original]
        _binding["scanned"] = len(sys.modules)
    return _binding["modules"]


@pytest.fixture(autouse=True)
def accepted_stacks_pass_the_schema(monkeypatch):
    """Wraps `parse_config` wherever a module bound it, and fails the test when a config it accepted fails the
    schema. Checked at teardown: a failure raised inside the Pulumi program could be swallowed by the engine."""
    original = config.parse_config
    refused: list[str] = []

    def parse_config(raw, **kwargs):
        stack = original(raw, **kwargs)
        problems = schema_problems({"config": raw})
        if problems:
            refused.append(f"{kwargs.get('source')}: {json.dumps(raw)[:400]}\n  " + "\n  ".join(problems))
        return stack

    for module in _modules_binding(original):
        monkeypatch.setattr(module, "parse_config", parse_config)
    yield
    assert not refused, ("the validator accepted stacks the JSON Schema refuses (declare each key the validator reads "
                         "as a Field of its section's Section, see gpushare/stackfile/declarations.py):\n"
                         + "\n".join(refused))
