"""Fuzz-style property: `plan` on a structural mutation of an example stack (a key dropped, a value of another type,
an extreme number) plans it (exit 0) or refuses it with configuration errors (exit 2), and never ends in a traceback.
The mutations are drawn with a fixed seed, so a failure names a mutation that reproduces."""

from __future__ import annotations

import random
import traceback
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.stack_files import plan, write_stack

STACKS = sorted((Path(__file__).resolve().parents[2] / "stacks").glob("Pulumi.*.yaml"))
SEED = 39
MUTATIONS_PER_STACK = 10
EXTREME_NUMBERS = (0, -1, 10**24 - 1, -(10**18), 2**63, 1e308, -1e308, 1e-300, 0.5, 4097)
OTHER_TYPES = ([], {}, "", "x" * 300, None, True, ["a", 1], {"a": {"b": 1}}, 3, 2.5)

Path_ = tuple[Any, ...]


def _paths(value: Any, at: Path_ = ()) -> list[Path_]:
    """Every key path below a mapping or list, depth first."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    found = []
    for key, child in children:
        found.append((*at, key))
        found.extend(_paths(child, (*at, key)))
    return found


def _parent(config: dict[str, Any], path: Path_) -> Any:
    for key in path[:-1]:
        config = config[key]
    return config


def mutate(config: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], str]:
    """One mutation of a deep copy of `config`, and what it did."""
    config = yaml.safe_load(yaml.safe_dump(config))
    path = rng.choice(_paths(config))
    parent, key = _parent(config, path), path[-1]
    kind = rng.choice(("drop", "type", "number"))
    if kind == "drop":
        del parent[key]
        return config, f"dropped {path}"
    value = rng.choice(EXTREME_NUMBERS if kind == "number" else OTHER_TYPES)
    parent[key] = value
    return config, f"set {path} to {value!r:.40}"


def _mutations() -> list[Any]:
    rng = random.Random(SEED)
    cases = []
    for stack in STACKS:
        config = yaml.safe_load(stack.read_text())["config"]
        for i in range(MUTATIONS_PER_STACK):
            mutated, what = mutate(config, rng)
            cases.append(pytest.param(mutated, what, id=f"{stack.stem}-{i}"))
    return cases


@pytest.mark.parametrize("config, what", _mutations())
def test_a_mutated_example_stack_plans_or_is_refused_never_a_traceback(tmp_path, capsys, config, what):
    stack = write_stack(tmp_path, config)
    try:
        code, _, err = plan(capsys, stack)
    except Exception:  # noqa: BLE001 - the property: no exception reaches the user
        pytest.fail(f"{what}: {traceback.format_exc()}")
    assert code in (0, 2), f"{what}: exit {code}\n{err}"
    assert "Traceback" not in err
