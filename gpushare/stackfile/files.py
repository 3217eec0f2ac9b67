"""Reading a stack file: YAML with duplicate keys refused, the `config:` mapping, and the stack's name."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.stackfile.checks import did_you_mean
from gpushare.stackfile.declarations import ARRAY, STRING, Field
from gpushare.stackfile.pool_config import MAX_GPU_POOLS
from gpushare.stackfile.tenant_config import MAX_TENANTS

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


MAX_FILE_BYTES = 1024 * 1024
"""The largest stack file read: 99 pools and 1,000 tenants (each with two pools, a quota and a group) are about
190 KB, and a PR's file larger than this would take seconds of parsing alone."""
MAX_VALUES = 100_000
"""The most values (each scalar, list and mapping, an alias counted as every value it repeats) a stack file may
expand to. 99 pools and 1,000 tenants are about 17,000; a few lines of nested aliases (a "billion laughs" file)
expand to millions, which `plan` would spend minutes and gigabytes encoding and checking."""
MAX_DEPTH = 64
"""The most levels of lists and mappings. A stack file's values are a few levels deep (operator values a dozen);
the checks and the JSON encoder recurse per level, and Python's recursion limit is 1,000 frames."""
MAX_INTEGER_DIGITS = 24
"""The longest integer gpushare reads: no stack value needs more (node counts, prices, bytes); Python refuses to
read an integer of over 4,300 digits at all (sys.int_info.default_max_str_digits)."""
YAML_TAG = "tag:yaml.org,2002:"
PLAIN_TAGS = frozenset(f"{YAML_TAG}{name}" for name in ("null", "bool", "int", "float", "str", "seq", "map", "merge",
                                                         "timestamp"))
"""The value types a stack file holds, as JSON (the form the Pulumi engine hands the program) does, plus merge keys
(`<<: *defaults`) and dates, read as the text written. Any other tag (`!!binary`, `!!set`, `!!omap`, `!custom`)
is refused."""


_NUMBERS = yaml.constructor.SafeConstructor()
"""Reads a float scalar as YAML does (`.inf`, `1_000.5`, `1e999`), to judge it before the document is built."""


class StackFileShapeError(Exception):
    """A stack file whose YAML is valid but is not a tree of plain values gpushare can read: where and why."""

    def __init__(self, mark: yaml.Mark, problem: str):
        super().__init__(problem)
        self.where = f"line {mark.line + 1}, column {mark.column + 1}"
        self.problem = problem


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _check_scalar(node: yaml.ScalarNode) -> None:
    if node.tag not in PLAIN_TAGS:
        raise StackFileShapeError(node.start_mark, f"the tag {node.tag.replace(YAML_TAG, '!!')} is not read: a "
                                  "stack file holds strings, numbers, booleans, lists and mappings; remove the tag")
    if node.tag == f"{YAML_TAG}int" and len(node.value) > MAX_INTEGER_DIGITS:
        raise StackFileShapeError(node.start_mark, f"an integer of {len(node.value)} characters; no stack value "
                                  f"needs more than {MAX_INTEGER_DIGITS}")
    if node.tag == f"{YAML_TAG}float" and not math.isfinite(_NUMBERS.construct_yaml_float(node)):
        raise StackFileShapeError(node.start_mark, f"{node.value!r} is not a finite number (YAML reads .inf, .nan "
                                  "and numbers beyond 1.8e308 as infinite or not a number); write the number meant")


def _check_node(node: yaml.Node) -> None:
    if isinstance(node, yaml.ScalarNode):
        _check_scalar(node)
    elif node.tag not in PLAIN_TAGS:
        what = "list" if isinstance(node, yaml.SequenceNode) else "mapping"
        raise StackFileShapeError(node.start_mark, f"the tag {node.tag.replace(YAML_TAG, '!!')} on a {what} is not "
                                  "read: a stack file holds strings, numbers, booleans, lists and mappings; remove it")
    elif isinstance(node, yaml.MappingNode):
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode):
                what = "list" if isinstance(key, yaml.SequenceNode) else "mapping"
                raise StackFileShapeError(key.start_mark, f"a {what} used as a mapping key; keys are plain names "
                                          "(`name: value`); look for a stray `?` or brackets left of a colon")


def check_shape(root: yaml.Node) -> None:
    """Refuse, before any value is built, a document that is no tree of plain values: one that contains itself
    (a recursive anchor), expands past MAX_VALUES through its aliases, nests past MAX_DEPTH, uses a list or mapping
    as a key, or holds a value JSON has no type for. Iterative, and each node is walked once however many aliases
    repeat it, so a bomb is measured in the time its few lines take to read."""
    expanded: dict[int, int] = {}  # id(node) -> how many values it stands for, aliases expanded
    height: dict[int, int] = {}  # id(node) -> levels below and including it
    on_path: set[int] = set()
    aliased = False  # whether a node was reached twice: the file repeats values through aliases
    todo: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while todo:
        node, depth, children_done = todo.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            children = _children(node)
            expanded[key] = 1 + sum(expanded[id(child)] for child in children)
            height[key] = 1 + max((height[id(child)] for child in children), default=0)
            if expanded[key] > MAX_VALUES and aliased:
                raise StackFileShapeError(node.start_mark, f"this value expands to over {MAX_VALUES:,} values "
                                          "(each alias counted as the value it repeats); a stack file is far "
                                          "smaller: write the values out, or look for aliases of aliases")
            if expanded[key] > MAX_VALUES:
                raise StackFileShapeError(node.start_mark, f"this value holds over {MAX_VALUES:,} values; a stack "
                                          f"file is far smaller (at most {MAX_GPU_POOLS} pools and {MAX_TENANTS:,} "
                                          "tenants)")
        elif key in expanded:
            aliased = True
            if depth - 1 + height[key] > MAX_DEPTH:
                raise StackFileShapeError(node.start_mark, f"nested over {MAX_DEPTH} levels of lists or mappings "
                                          "(through an alias); a stack file's values are a few levels deep")
        elif key in on_path:
            raise StackFileShapeError(node.start_mark, "this anchored value contains itself through an alias (a "
                                      "recursive anchor), so it has no end; alias only values defined before, "
                                      "outside the one being written")
        elif depth > MAX_DEPTH:
            raise StackFileShapeError(node.start_mark, f"nested over {MAX_DEPTH} levels of lists or mappings; a "
                                      "stack file's values are a few levels deep, so look for runaway brackets")
        else:
            _check_node(node)
            on_path.add(key)
            todo.append((node, depth, True))
            todo.extend((child, depth + 1, False) for child in _children(node))


class _StackFileLoader:
    """Checks the document's shape before building it (`check_shape`), reads dates as written, and refuses a key
    given twice in one mapping: plain YAML keeps the last one, silently."""

    def get_single_data(self):
        node = self.get_single_node()
        if node is None:
            return None
        check_shape(node)
        return self.construct_document(node)

    def construct_yaml_timestamp(self, node):
        # JSON, which the engine hands the program config in, has no date type: the text as written.
        return self.construct_scalar(node)

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == f"{YAML_TAG}merge":  # `<<: *defaults`, merged by PyYAML's own construct_mapping
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}; keep one (YAML silently keeps the last)", mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _StrictLoader(_StackFileLoader, yaml.SafeLoader):
    """PyYAML's own parser: its messages name what it found ("expected ',' or ']', but got ':'")."""


class _FastStrictLoader(_StackFileLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's parser (in PyYAML's wheels), several times faster; its messages are terser."""


for _loader in (_StrictLoader, _FastStrictLoader):
    _loader.add_constructor(f"{YAML_TAG}timestamp", _StackFileLoader.construct_yaml_timestamp)


def _load(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_FastStrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - the same file again, for PyYAML's message


def read_stack_file(path: Path) -> StackFile:
    """Read a stack file. Raises `ConfigError` naming the file when there is no `config:` mapping to validate."""
    source = str(path)
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ConfigError(source, [ConfigProblem("(file)", f"larger than {MAX_FILE_BYTES // 1024:,} KiB; a stack "
                                                               "file is a few KiB, so this is not one")])
        text = data.decode("utf-8")
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
    except StackFileShapeError as exc:
        raise ConfigError(source, [ConfigProblem(exc.where, exc.problem)]) from None
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


def load_yaml(text: str) -> Any:
    """YAML text read as a stack file is (duplicate keys, tags and bombs refused): for files beside the stacks, such
    as a fleet file (`gpushare.stackfile.fleet_config`). Raises yaml.YAMLError or StackFileShapeError."""
    return _load(text)
