"""A stack file is untrusted input in a pull request: whatever its YAML holds, `gpushare plan` answers with one
configuration error (exit 2) naming the file and the line, within seconds and a bounded amount of memory, and never
a traceback. Each file here ran for minutes, took gigabytes or ended in a traceback before (issue 39's fuzzing).

Each runs the real command in its own process with its address space capped (RLIMIT_AS): a blow-up ends in a
MemoryError traceback there, and a run past the subprocess timeout fails the test."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.stackfile.files import MAX_DEPTH, MAX_FILE_BYTES, MAX_VALUES
from gpushare.stackfile.pool_config import MAX_GPU_POOLS
from gpushare.stackfile.tenant_config import MAX_TENANTS
from tests.stack_files import MINIMAL_STACK_YAML, T4, write_stack

MEMORY_CAP = 1024 ** 3
"""Address space the command may have: an error needs no Pulumi engine, well under this."""
GENEROUS_SECONDS = 60
"""Each answers in about a second on an idle machine; the bound is for a loaded CI runner."""


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def plan_process(stack: Path) -> subprocess.CompletedProcess:
    """`python -m gpushare plan STACK` in its own, memory-capped process."""
    return subprocess.run([sys.executable, "-m", "gpushare", "plan", str(stack)], capture_output=True, text=True,
                          timeout=GENEROUS_SECONDS, preexec_fn=_cap_memory, cwd=stack.parent)


def assert_one_error(result: subprocess.CompletedProcess, stack: Path, *expected: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {stack}: 1 configuration error\n"), result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


def _pool_line(value: str) -> str:
    """MINIMAL_STACK_YAML with one more key of its pool, on line 8."""
    return MINIMAL_STACK_YAML + f"      labels: {value}\n"


ALIAS_BOMB = MINIMAL_STACK_YAML + """\
      labels:
        a: &a [x, x, x, x, x, x, x, x, x, x]
        b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
        d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
        f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
        g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
        h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
        i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
"""
"""Ten lines that expand to 10^9 strings (a "billion laughs")."""


@pytest.mark.parametrize("text, expected", [
    (ALIAS_BOMB, ("line 13, column 12: this value expands to over 100,000 values (each alias counted as the value "
                  "it repeats)",)),
    (MINIMAL_STACK_YAML.replace("  gpushare:cluster:\n", "  gpushare:cluster: &cluster\n")
     .replace("    name: gpushare-test\n", "    name: gpushare-test\n    self: *cluster\n"),
     ("line 3, column 21: this anchored value contains itself through an alias (a recursive anchor)",)),
    (MINIMAL_STACK_YAML.replace("  gpushare:pools:\n", "  gpushare:pools: &pools\n") + "      labels: *pools\n",
     ("line 5, column 19: this anchored value contains itself",)),
    (_pool_line("{? [a, b] : x}"), ("line 8, column 18: a list used as a mapping key",)),
    (_pool_line("{? {a: b} : x}"), ("line 8, column 18: a mapping used as a mapping key",)),
    (_pool_line("{count: " + "9" * 5_000 + "}"), ("line 8, column 23: an integer of 5000 characters",)),
    (_pool_line("{big: 1.0e+999}"), ("line 8, column 21: '1.0e+999' is not a finite number",)),
    (_pool_line("{nan: .nan}"), ("line 8, column 21: '.nan' is not a finite number",)),
    (MINIMAL_STACK_YAML + "      spot: {maxPrice: .inf}\n", ("line 8, column 24: '.inf' is not a finite number",)),
    (MINIMAL_STACK_YAML + "      spot: {maxPrice: " + "9" * 400 + "}\n", ("line 8, column 24: an integer of 400",)),
    (_pool_line("{a: !!binary aGVsbG8=}"), ("line 8, column 19: the tag !!binary is not read",)),
    (_pool_line("!!set {a, b}"), ("line 8, column 15: the tag !!set on a mapping is not read",)),
    (_pool_line("!!omap [a: 1]"), ("line 8, column 15: the tag !!omap on a list is not read",)),
    (_pool_line("{a: !vault secret}"), ("line 8, column 19: the tag !vault is not read",)),
    (_pool_line("[" * 500 + "]" * 500), (f"nested over {MAX_DEPTH} levels of lists or mappings",)),
    (_pool_line("{a: " * 300 + "x" + "}" * 300), (f"nested over {MAX_DEPTH} levels",)),
], ids=["alias-bomb", "recursive-mapping", "recursive-list", "list-key", "mapping-key", "long-integer",
        "overflowing-float", "nan", "infinite-spot-price", "long-spot-price", "binary", "set", "omap", "custom-tag",
        "deep-lists", "deep-mappings"])
def test_a_hostile_yaml_construct_is_one_error_naming_the_line(tmp_path, text, expected):
    stack = write_stack(tmp_path, text, "Pulumi.hostile.yaml")

    assert_one_error(plan_process(stack), stack, *expected)


def test_values_past_the_budget_written_out_are_refused_too(tmp_path):
    labels = "".join(f"        k{i}: v\n" for i in range(MAX_VALUES // 2 + 1))
    stack = write_stack(tmp_path, MINIMAL_STACK_YAML + "      labels:\n" + labels, "Pulumi.big.yaml")

    assert_one_error(plan_process(stack), stack, f"line 9, column 9: this value holds over {MAX_VALUES:,} values")


def test_a_file_past_the_size_bound_is_refused_before_it_is_parsed(tmp_path):
    stack = write_stack(tmp_path, MINIMAL_STACK_YAML + "# " + "x" * MAX_FILE_BYTES + "\n", "Pulumi.huge.yaml")

    assert_one_error(plan_process(stack), stack, "(file): larger than 1,024 KiB")


def test_a_list_or_mapping_as_a_pool_or_tenant_name_is_a_type_error_not_a_crash(tmp_path):
    text = MINIMAL_STACK_YAML.replace("    - name: t4\n", "    - name: [t4]\n") + \
        "  gpushare:tenants:\n    - {name: {a: 1}, pools: [t4]}\n"
    stack = write_stack(tmp_path, text, "Pulumi.names.yaml")

    result = plan_process(stack)
    assert "Traceback" not in result.stderr and result.returncode == 2, result.stderr
    assert 'gpushare:pools[0].name: expected a string' in result.stderr and 'got a list ["t4"]' in result.stderr
    assert 'gpushare:tenants[0].name: expected a namespace name, got a mapping {"a": 1}' in result.stderr


def _pools(count: int) -> str:
    return "".join(f"    - {{name: p{i}, vmSize: {T4}}}\n" for i in range(count))


def test_more_pools_than_aks_allows_is_one_error_before_the_engine_runs(tmp_path):
    """1,000 pools ended in a RecursionError in the Pulumi SDK's cycle breaker after 90 s."""
    text = "config:\n  azure-native:location: westeurope\n  gpushare:cluster: {name: c}\n  gpushare:pools:\n" + _pools(1000)
    stack = write_stack(tmp_path, text, "Pulumi.pools.yaml")

    assert_one_error(plan_process(stack), stack, f"gpushare:pools: 1000 GPU pools; AKS allows 100 node pools per "
                                                 f"cluster, one of them the system pool, so at most {MAX_GPU_POOLS}")


def test_more_tenants_than_the_bound_is_one_error_before_the_engine_runs(tmp_path):
    tenants = "".join(f"    - {{name: team{i}, pools: [t4]}}\n" for i in range(MAX_TENANTS + 1))
    stack = write_stack(tmp_path, MINIMAL_STACK_YAML + "  gpushare:tenants:\n" + tenants, "Pulumi.tenants.yaml")

    assert_one_error(plan_process(stack), stack, f"gpushare:tenants: {MAX_TENANTS + 1} tenants; at most 1,000")


def test_the_bounds_admit_what_a_stack_needs(tmp_path):
    """Anchors, aliases and merge keys that repeat a pool's settings, dates (read as the text written) and the most
    pools AKS allows are all fine."""
    from gpushare.stackfile.config import load_stack_file

    text = ("config:\n  azure-native:location: westeurope\n  gpushare:cluster: {name: c}\n  gpushare:pools:\n"
            f"    - &t4 {{name: p0, vmSize: {T4}, labels: {{since: 2024-01-01}}}}\n"
            + "".join(f"    - {{<<: *t4, name: p{i}}}\n" for i in range(1, MAX_GPU_POOLS)))
    stack = load_stack_file(write_stack(tmp_path, text, "Pulumi.anchors.yaml"))

    assert [pool.name for pool in stack.pools] == [f"p{i}" for i in range(MAX_GPU_POOLS)]
    assert stack.pools[-1].labels == (("since", "2024-01-01"),)


def test_config_the_engine_passes_as_json_is_held_to_the_same_bounds():
    """Under `pulumi preview`/`up` the config arrives JSON-encoded, and Python's JSON reader takes Infinity and NaN
    and raises ValueError on an integer past 4,300 digits: a Spot price is refused, not a traceback."""
    from gpushare.errors import ConfigError
    from gpushare.stackfile.config import decode_engine_config, parse_config

    config = decode_engine_config({
        "azure-native:location": "westeurope", "gpushare:cluster": '{"name": "c"}',
        "gpushare:pools": f'[{{"name": "t4", "vmSize": "{T4}", "spot": {{"maxPrice": Infinity}}}}]',
        "gpushare:tenants": "9" * 5_000,
    })
    with pytest.raises(ConfigError) as error:
        parse_config(config, source="deploy(config)", stack="dev")

    problems = {problem.path: problem.message for problem in error.value.problems}
    assert problems["gpushare:pools[0].spot.maxPrice"].startswith("must be a finite price in USD per hour, got inf")
    assert problems["gpushare:tenants"].startswith("expected a list of tenants, got a string")
