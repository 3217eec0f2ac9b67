"""Reading a stack file: YAML with duplicate keys refused, the `config:` mapping, and the stack's name."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.stackfile.checks import did_you_mean
from gpushare.stackfile.declarations import ARRAY, STRING, Field

PULUMI_STACK_FIELDS = (
    # Pulumi's stack settings file reference (pulumi.com/docs/iac/concepts/projects/stack-settings-file).
    Field("secretsprovider", STRING, "Pulumi's secrets provider for the stack's secret values (written by the "
                                     "Pulumi CLI).", examples=("passphrase",)),
    Field("encryptedkey", STRING, "The KMS-encrypted data key of a cloud secrets provider (written by the Pulumi "
                                  "CLI).", examples=("ciphertext",)),
    Field("encryptionsalt", STRING, "The passphrase secrets provider's salt (written by the Pulumi CLI).",
          examples=("v1:c2FsdA==:v1:bm9uY2U=:Y2lwaGVy",)),
    Field("environment", ARRAY, "Pulumi ESC environments the stack imports.",
          items=Field("environment", STRING, "An ESC environment's name.", examples=("gpushare/dev",)),
          also=({"type": "object"},)),
)
"""The keys a Pulumi stack file may hold besides `config`; gpushare does not read them."""
STACK_FILE_KEYS = ("config", *(f.name for f in PULUMI_STACK_FIELDS))


def stack_name_for(path: Path) -> str:
    """`stacks/Pulumi.prod.yaml` -> `prod`; any other file name -> its stem."""
    name = path.name
    for suffix in (".yaml", ".yml"):
        if name.startswith("Pulumi.") and name.endswith(suffix):
            return name[len("Pulumi."):-len(suffix)]
    return path.stem


@dataclass(frozen=True)
class StackFile:
    """A stack file's `config:` mapping, with the problems found in the file around it."""

    path: Path
    config: dict[str, Any]
    problems: tuple[ConfigProblem, ...] = ()


class _UniqueKeys:
    """Refuses a key given twice in one mapping: plain YAML keeps the last one, silently."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}; keep one (YAML silently keeps the last)", mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _StrictLoader(_UniqueKeys, yaml.SafeLoader):
    """PyYAML's own parser: its messages name what it found ("expected ',' or ']', but got ':'")."""


class _FastStrictLoader(_UniqueKeys, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's parser (in PyYAML's wheels), several times faster; its messages are terser."""


def _load(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_FastStrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - the same file again, for PyYAML's message


def read_stack_file(path: Path) -> StackFile:
    """Read a stack file. Raises `ConfigError` naming the file when there is no `config:` mapping to validate."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, [ConfigProblem("(file)", "no such stack file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, [ConfigProblem("(file)", f"cannot be read: {exc}")]) from None
    try:
        document = _load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, [ConfigProblem(where, f"not valid YAML: {problem}")]) from None
    except RecursionError:
        # The parser recurses per level: a file nested hundreds of levels deep (no stack file is) exhausts it.
        problem = (f"nested too deeply to read (over {sys.getrecursionlimit()} levels of lists or mappings); a stack "
                   "file's values are a few levels deep, so look for runaway brackets")
        raise ConfigError(source, [ConfigProblem("(file)", problem)]) from None
    document = document if isinstance(document, dict) else {}
    problems = [ConfigProblem(str(key), f"unknown top-level key{did_you_mean(str(key), STACK_FILE_KEYS)}; "
                                        f"gpushare settings go under `config:`")
                for key in document if key not in STACK_FILE_KEYS]
    if not isinstance(document.get("config"), dict):
        problems.append(ConfigProblem(
            "config", "a stack file is a YAML mapping with a `config:` mapping, e.g.\n"
                      "      config:\n        azure-native:location: westeurope\n"
                      "        gpushare:cluster: {name: my-cluster}\n        gpushare:pools: [...]"))
        raise ConfigError(source, problems)
    return StackFile(path=path, config={str(k): v for k, v in document["config"].items()}, problems=tuple(problems))
