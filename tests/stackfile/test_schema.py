"""The stack file's JSON Schema: valid draft 2020-12, shipped as generated, and in step with the validator both
ways (what one accepts the other accepts; what the schema calls unknown the validator refuses)."""

from __future__ import annotations

import ast
import copy
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pytest
import regress
import yaml

from benchmarks.plan_benchmark import stack_with
from gpushare.cli import main
from gpushare.errors import ConfigError, ConfigProblem
from gpushare.model import keys
from gpushare.stackfile.config import GPUSHARE_KEYS, load_stack_file, parse_config
from gpushare.stackfile.declarations import Field, Section
from gpushare.stackfile.schema import SCHEMA_FILE, STACK_FILE, stack_file_schema
from tests.stack_files import write_stack, MINIMAL_STACK_YAML, T4
from tests.stackfile.ajv import ajv_check
from tests.stackfile.schema_check import schema_problems

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_STACKS = sorted((REPO_ROOT / "stacks").glob("Pulumi.*.yaml"))
SCHEMA_LINE = "# yaml-language-server: $schema="
UNKNOWN_KEY_WORDS = ("unknown key", "unknown top-level key", "is a key of", "config keys need a namespace")


def minimal() -> dict[str, Any]:
    return yaml.safe_load(MINIMAL_STACK_YAML)


def problems_of(document: dict[str, Any], tmp_path: Path) -> list[ConfigProblem]:
    """What the validator says about a whole stack file (the file's top level included)."""
    path = write_stack(tmp_path, yaml.safe_dump(document, sort_keys=False), "Pulumi.schema.yaml")
    try:
        load_stack_file(path)
    except ConfigError as error:
        return list(error.problems)
    return []


# --- the schema itself --------------------------------------------------------------------------------------------

def test_schema_is_valid_draft_2020_12():
    schema = stack_file_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # The `regex` format is ECMA-262 (JSON Schema 2020-12 section 7.3.8), not Python's `re`.
    ecma = jsonschema.FormatChecker(formats=())
    ecma.checks("regex", raises=regress.RegressError)(lambda pattern: regress.Regex(pattern, flags="u") is not None)
    jsonschema.Draft202012Validator.check_schema(schema, format_checker=ecma)


def test_every_ecmascript_validator_compiles_the_shipped_schema():
    """The YAML language server and ajv are JavaScript: each pattern must be an ECMA-262 regular expression
    (check-jsonschema's default engine checks the `regex` format, and compiles the schema's patterns to validate)."""
    tool = Path(sys.executable).with_name("check-jsonschema")
    checked = subprocess.run([str(tool), "--check-metaschema", str(SCHEMA_FILE)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    stacks = subprocess.run([str(tool), "--schemafile", str(SCHEMA_FILE), *map(str, EXAMPLE_STACKS)],
                            capture_output=True, text=True)
    assert stacks.returncode == 0, stacks.stdout + stacks.stderr


def test_ajv_compiles_the_shipped_schema_and_accepts_every_example_stack(tmp_path):
    """ajv (draft 2020-12, strict, unicode patterns) is what JavaScript editors compile the schema with."""
    documents = []
    for stack in EXAMPLE_STACKS:
        document = tmp_path / f"{stack.stem}.json"
        document.write_text(json.dumps(yaml.safe_load(stack.read_text())))
        documents.append(document)
    verdict = ajv_check(SCHEMA_FILE, documents)
    assert verdict["compiled"], verdict.get("error")
    assert [(Path(r["file"]).name, r["valid"], r["errors"]) for r in verdict["results"]] == [
        (document.name, True, []) for document in documents]


def test_ajv_refuses_a_python_only_pattern(tmp_path):
    """The check can fail: the schema as shipped before used Python's (?P<name>) groups, which ECMA-262 has not."""
    schema = tmp_path / "python.schema.json"
    schema.write_text(json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string",
                                  "pattern": "^(?P<x>a)$"}))
    verdict = ajv_check(schema, [])
    assert verdict["compiled"] is False and "Invalid" in verdict["error"]


SHIPPED_SCHEMAS = sorted((REPO_ROOT / "gpushare").rglob("*.schema.json"))


def schema_patterns(node: Any) -> list[str]:
    """Every `pattern` in a schema document."""
    if isinstance(node, dict):
        return ([node["pattern"]] if isinstance(node.get("pattern"), str) else []) + \
            [p for value in node.values() for p in schema_patterns(value)]
    if isinstance(node, list):
        return [p for value in node for p in schema_patterns(value)]
    return []


def strings_in(node: Any) -> set[str]:
    if isinstance(node, dict):
        return {s for key, value in node.items() for s in strings_in(key) | strings_in(value)}
    if isinstance(node, list):
        return {s for value in node for s in strings_in(value)}
    return {node} if isinstance(node, str) else set()


def re2_verdicts(patterns: list[str], values: list[str]) -> list[dict[str, Any]]:
    """Go's regexp (RE2) on each pattern: its compile error, or which values it matches (tools/re2check)."""
    from tests.go_tools import built_or_skip

    binary = built_or_skip(REPO_ROOT / "tools" / "re2check" / "build", "the schema's RE2 check", timeout=300)
    done = subprocess.run([str(binary)], input=json.dumps([{"pattern": p, "values": values} for p in patterns]),
                          capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)


def test_every_schema_pattern_compiles_in_python_re_ecma_262_and_go_re2():
    """Issue 39: the named groups `(?<subscription>...)` compiled in ECMA-262 only; Python's `re` (the jsonschema
    package) refused them, so validating a stack with it failed on the schema itself."""
    patterns = sorted({p for schema in SHIPPED_SCHEMAS for p in schema_patterns(json.loads(schema.read_text()))})
    assert len(patterns) > 20
    unreadable = []
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            unreadable.append(("python re", pattern, str(error)))
        try:
            regress.Regex(pattern, flags="u")
        except regress.RegressError as error:
            unreadable.append(("ECMA-262", pattern, str(error)))
    unreadable += [("go RE2", v["pattern"], v["error"]) for v in re2_verdicts(patterns, []) if v["error"]]
    assert not unreadable


def test_the_three_engines_match_the_same_values():
    """Every pattern, on every string of the example stacks and a few IDs, matches alike in Python's `re`,
    ECMA-262 and RE2 (unanchored, as JSON Schema's `pattern` is)."""
    patterns = sorted(set(schema_patterns(stack_file_schema())))
    values = sorted(set().union(*(strings_in(yaml.safe_load(s.read_text())) for s in EXAMPLE_STACKS)) | {
        "/subscriptions/3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3/resourceGroups/rg/providers/Microsoft.Network/"
        "virtualNetworks/v/subnets/s",
        "/SUBSCRIPTIONS/3F2C9A10-7B1D-4C55-9E0A-2B8F6D41C7E3/resourcegroups/rg/providers/microsoft.network/"
        "virtualnetworks/v/subnets/s", "02:00", "22:30", "24:00", "Standard_NC4as_T4_v3", "10.0.0.0/16", "x y"})
    for verdict in re2_verdicts(patterns, values):
        pattern = verdict["pattern"]
        python = [re.search(pattern, v) is not None for v in values]
        ecma = [regress.Regex(pattern, flags="u").find(v) is not None for v in values]
        assert python == ecma == verdict["matches"], pattern


@pytest.mark.parametrize("stack", EXAMPLE_STACKS, ids=lambda p: p.name)
def test_pythons_jsonschema_validates_every_example_stack(stack):
    """The jsonschema package, with its own `pattern` (Python's `re`), as a Python user would validate a stack."""
    errors = list(jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).iter_errors(
        yaml.safe_load(stack.read_text())))
    assert not errors, [e.message for e in errors]


def test_check_jsonschema_with_pythons_regex_validates_every_example_stack():
    tool = Path(sys.executable).with_name("check-jsonschema")
    done = subprocess.run([str(tool), "--regex-variant", "python", "--schemafile", str(SCHEMA_FILE),
                           *map(str, EXAMPLE_STACKS)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_pattern_no_engine_shares_is_refused_when_the_schema_is_made():
    from gpushare.stackfile.schema import portable_pattern

    assert portable_pattern(re.compile(r"^(?P<sub>[a-z]+)/(?P<rg>\w+)$")) == r"^([a-z]+)/(\w+)$"
    for pattern in (r"^(?=a)", r"^(a)\1$", r"\Aa"):
        with pytest.raises(AssertionError):
            portable_pattern(re.compile(pattern))


@pytest.mark.parametrize(("value", "valid"), [
    ("/subscriptions/3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3/resourceGroups/rg/providers/Microsoft.Network/"
     "virtualNetworks/v/subnets/s", True),
    ("/SUBSCRIPTIONS/3F2C9A10-7B1D-4C55-9E0A-2B8F6D41C7E3/resourcegroups/rg/providers/microsoft.network/"
     "virtualnetworks/v/subnets/s", True),
    ("/subscriptions/x/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s", False),
])
def test_a_case_insensitive_pattern_is_case_insensitive_in_the_schema_too(value, valid):
    """JSON Schema has no flags: the validator's re.IGNORECASE (ARM IDs are case-insensitive) is spelt out."""
    from gpushare.stackfile.network_config import SUBNET_ID_RE
    from gpushare.stackfile.schema import portable_pattern
    assert bool(SUBNET_ID_RE.match(value)) is valid
    assert (regress.Regex(portable_pattern(SUBNET_ID_RE), flags="u").find(value) is not None) is valid


def test_schema_says_cross_field_rules_stay_in_the_validator():
    description = stack_file_schema()["description"]
    assert "stay in the validator" in description and "gpushare plan" in description


def test_shipped_schema_file_is_what_the_command_prints(capsys):
    assert main(["schema"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed) == stack_file_schema()
    assert SCHEMA_FILE.read_text(encoding="utf-8") == printed, (
        f"{SCHEMA_FILE.relative_to(REPO_ROOT)} is stale: regenerate it with "
        f"`python -m gpushare schema > {SCHEMA_FILE.relative_to(REPO_ROOT)}`")


def test_schema_command_prints_only_the_schema_on_stdout():
    done = subprocess.run([sys.executable, "-m", "gpushare", "schema"], cwd=REPO_ROOT, capture_output=True,
                          text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["title"] == "gpushare stack file"


@pytest.mark.parametrize("stack", EXAMPLE_STACKS, ids=lambda p: p.name)
def test_example_stacks_name_the_shipped_schema_on_their_first_line(stack):
    first = stack.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(SCHEMA_LINE), f"{stack.name}: first line must be `{SCHEMA_LINE}<path>`"
    assert (stack.parent / first[len(SCHEMA_LINE):]).resolve() == SCHEMA_FILE


def test_every_key_is_described_as_required_or_optional():
    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for name, prop in node.get("properties", {}).items():
                assert prop["description"].startswith(("Required. ", "Optional. ")), f"{path}.{name}"
                assert prop["description"].startswith("Required. ") == (name in node.get("required", ())), \
                    f"{path}.{name}"
            for value in node.values():
                walk(value, path)
        elif isinstance(node, list):
            for value in node:
                walk(value, path)

    walk(stack_file_schema(), "")


def test_the_gpushare_keys_listed_in_keys_py_are_the_declared_ones():
    assert keys.PROJECT_KEYS == GPUSHARE_KEYS


# --- stacks the validator accepts pass the schema -------------------------------------------------------------------

def _module_stack_texts() -> dict[str, str]:
    """Module-level constants of the test modules that hold stack-file text (`DEV_STACK = \"\"\"config: ...`): read
    from the source, and only a module whose text is computed (an f-string) is imported."""
    texts = {}
    for path in sorted((REPO_ROOT / "tests").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if "gpushare:pools" not in source:
            continue
        module_name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
        for node in ast.parse(source).body:
            if not (isinstance(node, ast.Assign) and isinstance(node.value, (ast.Constant, ast.JoinedStr))
                    and any(isinstance(part, ast.Constant) and "config:" in str(part.value)
                            for part in (node.value, *getattr(node.value, "values", ())))):
                continue
            for target in node.targets:
                if isinstance(target, ast.Name):
                    value = (node.value.value if isinstance(node.value, ast.Constant)
                             else getattr(importlib.import_module(module_name), target.id))
                    texts[f"{module_name}.{target.id}"] = value
    return texts


def _shipped_and_written_stacks() -> dict[str, dict[str, Any]]:
    stacks = {path.name: yaml.safe_load(path.read_text(encoding="utf-8")) for path in EXAMPLE_STACKS}
    for path in sorted((REPO_ROOT / "tests").rglob("Pulumi.*.yaml")):
        stacks[str(path.relative_to(REPO_ROOT))] = yaml.safe_load(path.read_text(encoding="utf-8"))
    for pools in (1, 10, 50):
        stacks[f"benchmark stack_with({pools})"] = stack_with(pools)
    for name, text in _module_stack_texts().items():
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError:
            continue  # a fixture broken on purpose
        if isinstance(document, dict) and isinstance(document.get("config"), dict):
            stacks[name] = document
    return stacks


def test_every_example_and_fixture_stack_the_validator_accepts_passes_the_schema():
    accepted = {}
    for name, document in _shipped_and_written_stacks().items():
        try:
            parse_config(document["config"], source=name, stack="fixture")
        except ConfigError:
            continue  # a deliberately broken fixture: the cases below check that the schema refuses such stacks
        accepted[name] = schema_problems(document)
    assert {name for name in accepted if name.startswith("Pulumi.")} == {p.name for p in EXAMPLE_STACKS}
    assert len(accepted) >= 10, sorted(accepted)  # the fixtures were found
    assert {name: problems for name, problems in accepted.items() if problems} == {}


# --- every schema key is accepted; every key the schema does not name is refused -----------------------------------

def example(schema: dict[str, Any], path: str) -> Any:
    """A value for `schema` using every property it declares (examples, defaults, first enum values, minimums)."""
    if "examples" in schema:
        return schema["examples"][0]
    if "default" in schema and not isinstance(schema["default"], list):
        return schema["default"]
    if "anyOf" in schema:
        return example(schema["anyOf"][0], path)  # the declared form; the others are what YAML makes of it
    if "properties" in schema:
        return {name: example(prop, f"{path}.{name}".lstrip(".")) for name, prop in schema["properties"].items()}
    if isinstance(schema.get("additionalProperties"), dict):
        return {"nvidia.com/gpu": example(schema["additionalProperties"], f"{path}.*")}
    if schema.get("type") == "array":
        return [example(schema["items"], f"{path}[]")]
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type") == "integer":
        return schema.get("minimum", 1)
    if schema.get("type") == "boolean":
        return True
    pytest.fail(f"{path}: no example value; give its Field `examples=`")


def every_property_stack() -> dict[str, Any]:
    return example(stack_file_schema(), "")


def object_paths(document: Any, schema: dict[str, Any], path: tuple = ()) -> list[tuple[tuple, bool]]:
    """Every mapping in `document` with its schema: (path, whether the schema refuses keys it does not name)."""
    schema = schema["anyOf"][0] if "anyOf" in schema else schema
    found = []
    if isinstance(document, dict) and "properties" in schema:
        found.append((path, schema.get("additionalProperties") is False))
        for name, value in document.items():
            found += object_paths(value, schema["properties"][name], (*path, name))
    elif isinstance(document, list) and "items" in schema:
        for i, value in enumerate(document):
            found += object_paths(value, schema["items"], (*path, i))
    return found


def validator_path(path: tuple) -> str:
    """A document path as the validator's messages write it: `gpushare:pools[0].sharing` (no `config.`)."""
    text = ""
    for part in path[1:] if path[:1] == ("config",) else path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def at(document: Any, path: tuple) -> Any:
    for part in path:
        document = document[part]
    return document


def test_a_stack_using_every_schema_key_passes_the_schema_and_the_validator_knows_every_key(tmp_path):
    document = every_property_stack()
    assert schema_problems(document) == []
    unknown = [p for p in problems_of(document, tmp_path) if any(words in p.message for words in UNKNOWN_KEY_WORDS)]
    assert unknown == []
    # Each declared key was written (so each was offered to the validator).
    assert {validator_path(path) for path, _ in object_paths(document, stack_file_schema())} >= {
        "gpushare:cluster.upgrades.window", "gpushare:pools[0].sharing", "gpushare:pools[0].autoscale",
        "gpushare:pools[0].upgrade", "gpushare:tenants[0]", "gpushare:operator"}


def test_a_key_the_schema_does_not_name_is_refused_by_both_wherever_the_schema_refuses_it(tmp_path):
    document = every_property_stack()
    closed = [path for path, refuses in object_paths(document, stack_file_schema()) if refuses]
    assert len(closed) >= 10
    for path in closed:
        broken = copy.deepcopy(document)
        at(broken, path)["bogusKey"] = 1
        assert schema_problems(broken), path
        where = f"{validator_path(path)}.bogusKey" if path else "bogusKey"
        assert any(p.path == where and "unknown" in p.message for p in problems_of(broken, tmp_path)), where


def test_a_key_left_empty_means_what_leaving_it_out_means_to_both_or_to_neither(tmp_path):
    """YAML's `key:` with nothing after it is null. Where the validator takes it as the key left out (its default, or
    "required" for a required key), the schema allows null exactly as it allows the key's absence; where the validator
    refuses it (`sharing:` with its keys not indented under it), the schema refuses null too, or an editor would pass a
    stack `plan` then refuses."""
    document = every_property_stack()
    refused_when_empty = []
    for path, _ in object_paths(document, stack_file_schema()):
        if not path:
            continue  # the file's own keys: `config:` left empty is no stack at all
        for name in list(at(document, path)):
            emptied, left_out = copy.deepcopy(document), copy.deepcopy(document)
            at(emptied, path)[name] = None
            del at(left_out, path)[name]
            where = validator_path((*path, name))

            def refused_here(stack: dict[str, Any]) -> set[str]:
                return {p.path for p in problems_of(stack, tmp_path)
                        if p.path == where or p.path.startswith((f"{where}.", f"{where}["))}
            by_validator = refused_here(emptied) != refused_here(left_out)
            by_schema = bool(schema_problems(emptied)) != bool(schema_problems(left_out))
            assert by_schema == by_validator, (where, f"empty is {'not ' * by_validator}the key left out to the "
                                                      f"validator, {'not ' * by_schema}to the schema")
            if by_validator:
                refused_when_empty.append(where)
    assert {"gpushare:pools[0].sharing", "gpushare:pools[0].autoscale",
            "gpushare:cluster.upgrades.window.start"} <= set(refused_when_empty)


def _sections(fields: tuple[Field, ...], path: tuple) -> list[tuple[tuple, Section]]:
    found = []
    for f in fields:
        inner = f.items if f.items is not None else f
        where = (*path, f.name, 0) if f.items is not None else (*path, f.name)
        if inner.section is not None:
            found += [(where, inner.section), *_sections(inner.section.fields, where)]
    return found


def test_every_declared_section_is_an_object_of_the_schema_with_exactly_its_keys():
    schema = stack_file_schema()
    sections = [((), STACK_FILE), *_sections(STACK_FILE.fields, ())]
    assert len(sections) >= 12
    for path, section in sections:
        node = schema
        for part in path:
            node = node["items"] if isinstance(part, int) else node["properties"][part]
            node = node["anyOf"][0] if "anyOf" in node else node
        assert list(node["properties"]) == list(section.keys), path
        assert (node.get("additionalProperties") is False) == section.closed, path


# --- bad stacks fail the schema (and the validator) -----------------------------------------------------------------

def pool(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda config: config["gpushare:pools"][0].update(changes)


def cluster(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda config: config["gpushare:cluster"].update(changes)


BAD = {
    # misspelt keys
    "misspelt pool key": (pool(vmsize=T4), "gpushare:pools[0].vmsize"),
    "misspelt gpushare key": (lambda config: config.update({"gpushare:pool": []}), "gpushare:pool"),
    "key without a namespace": (lambda config: config.update({"location": "westeurope"}), "location"),
    "misspelt nested key": (pool(sharing={"strategy": "mps", "replica": 2}), "gpushare:pools[0].sharing.replica"),
    # wrong types
    "quoted count": (pool(count="2"), "gpushare:pools[0].count"),
    "replicas as words": (pool(sharing={"strategy": "mps", "replicas": "four"}), "gpushare:pools[0].sharing.replicas"),
    "recreate as a string": (pool(recreate="yes"), "gpushare:pools[0].recreate"),
    "pools as a mapping": (lambda config: config.update({"gpushare:pools": {"name": "t4"}}), "gpushare:pools"),
    "unquoted kubernetes version": (cluster(kubernetesVersion=1.33), "gpushare:cluster.kubernetesVersion"),
    # unknown values
    "unknown MIG profile": (pool(vmSize="Standard_ND96asr_v4", mig="MIG5g"), "gpushare:pools[0].mig"),
    "unknown region": (lambda config: config.update({"azure-native:location": "westeu"}), "azure-native:location"),
    "enum in the wrong case": (pool(osSku="ubuntu"), "gpushare:pools[0].osSku"),
    "unknown tier": (cluster(tier="Platinum"), "gpushare:cluster.tier"),
    "chart version without its v": (lambda config: config.update({"gpushare:operator": {"chartVersion": "25.3.0"}}),
                                    "gpushare:operator.chartVersion"),
    "retired VM size": (pool(vmSize="Standard_NC6s_v3"), "gpushare:pools[0].vmSize"),
    "unknown zone": (pool(zones=["4"]), "gpushare:pools[0].zones[0]"),
    "guard off": (lambda config: config.update({"gpushare:guard": False}), "gpushare:guard"),
    # out of range
    "too many nodes": (pool(count=1001), "gpushare:pools[0].count"),
    "one replica": (pool(sharing={"strategy": "time-slicing", "replicas": 1}), "gpushare:pools[0].sharing.replicas"),
    "short maintenance window": (cluster(upgrades={"window": {"hours": 3}}), "gpushare:cluster.upgrades.window.hours"),
    "autoscale max 0": (pool(autoscale={"min": 0, "max": 0}), "gpushare:pools[0].autoscale.max"),
    "surge above 100%": (pool(upgrade={"maxSurge": "150%"}), "gpushare:pools[0].upgrade.maxSurge"),
    "quota of 0": (lambda config: config.update({"gpushare:tenants": [
        {"name": "vision", "pools": ["t4"], "quota": {"nvidia.com/gpu": 0}}]}),
        "gpushare:tenants[0].quota.nvidia.com/gpu"),
    "too many authorized ranges": (cluster(apiServer={"authorizedIpRanges": [f"10.0.{i // 256}.{i % 256}/32"
                                                                             for i in range(201)]}),
                                   "gpushare:cluster.apiServer.authorizedIpRanges"),
    "no pools": (lambda config: config.update({"gpushare:pools": []}), "gpushare:pools"),
    "missing cluster name": (lambda config: config.update({"gpushare:cluster": {}}), "gpushare:cluster.name"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_stack_fails_the_schema_and_the_validator_at_the_same_key(case):
    change, path = BAD[case]
    document = minimal()
    change(document["config"])
    assert schema_problems(document), f"the schema accepts {case}"
    with pytest.raises(ConfigError) as refused:
        parse_config(document["config"], source="stacks/Pulumi.bad.yaml", stack="bad")
    assert path in {p.path for p in refused.value.problems}
