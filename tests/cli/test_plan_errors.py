"""`python -m gpushare plan STACK` on bad input: exit 2, one `error:` block on stderr naming the stack file and every
problem, nothing on stdout, no traceback, and the Pulumi program never run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import gpushare.render.mock_engine
from gpushare.cli import main
from gpushare.stackfile.project import available_stacks, resolve_stack_file
from tests.stack_files import MINIMAL_STACK_YAML, T4, write_stack

REPO_ROOT = Path(__file__).resolve().parents[2]


SEVERAL_PROBLEMS = f"""\
config:
  azure-native:location: West Europe
  gpushare:cluster:
    name: gpushare-test
    kubernetesVersion: 1.33
  gpushare:operator: {{migStrategy: mixed}}
  gpushare:pools:
    - name: t4
      vmSize: {T4}
      mig: MIG1g
      count: "2"
    - name: v100
      vmSize: Standard_NC6s_v3
    - name: t4mps
      vmSize: {T4}
      sharing: {{strategy: mps, replicas: 1}}
      autoscale: {{min: 3, max: 1}}
    - name: t4
      vmSize: Standard_NC8as_T4_v3
      sharing: {{strategy: mps, replicas: 4}}
"""


@dataclass(frozen=True)
class Bad:
    id: str
    text: str
    fragments: tuple[str, ...]
    """Each must appear in stderr."""
    count: int
    """How many problems the header announces."""


BAD = [
    Bad("rejects_malformed_yaml",
        "config:\n  azure-native:location: westeurope\n  gpushare:cluster: {name: c1\n  gpushare:pools: []\n",
        ("line 4, column 17: not valid YAML",), 1),
    Bad("rejects_file_without_config", "secretsprovider: passphrase\n",
        ("config: a stack file is a YAML mapping with a `config:` mapping",), 1),
    Bad("rejects_duplicate_yaml_key", MINIMAL_STACK_YAML + "      count: 1\n      count: 2\n",
        ("line 9, column 7: not valid YAML: duplicate key 'count'",), 1),
    Bad("rejects_empty_file", "", ("`config:` mapping",), 1),
    Bad("rejects_missing_pools",
        "config:\n  azure-native:location: westeurope\n  gpushare:cluster: {name: c1}\n",
        ("gpushare:pools: required: at least one GPU pool", f"- {{name: t4, vmSize: {T4}}}"), 1),
    Bad("rejects_string_where_a_number_belongs", MINIMAL_STACK_YAML + '      count: "2"\n',
        ("gpushare:pools[0].count: expected a whole number from 0 to 1000, got a string '2'; write it without quotes",),
        1),
    Bad("rejects_string_replicas", MINIMAL_STACK_YAML + "      sharing: {strategy: time-slicing, replicas: four}\n",
        ("gpushare:pools[0].sharing.replicas: expected a whole number 2 or more, got a string 'four'",), 1),
    Bad("rejects_unknown_key", MINIMAL_STACK_YAML + "      vmsize: x\n",
        ("gpushare:pools[0].vmsize: unknown key (did you mean 'vmSize'?)",), 1),
    Bad("rejects_guard_off_unquoted", MINIMAL_STACK_YAML + "  gpushare:guard: off\n",
        ("gpushare:guard: YAML reads an unquoted off, no or false as the boolean false, got false",), 1),
    # One mistake, one error: what follows from the mistake is not reported again.
    Bad("misspelt_pools_key_is_one_error",
        MINIMAL_STACK_YAML.replace("gpushare:pools:", "gpushare:pool:")
        + "  gpushare:tenants:\n    - {name: vision, pools: [t4]}\n",
        ("gpushare:pool: unknown key (did you mean 'gpushare:pools'?)",), 1),
    Bad("pool_with_bad_replicas_is_not_judged_by_a_tenant_quota",
        MINIMAL_STACK_YAML + "      sharing: {strategy: time-slicing, replicas: four}\n"
        + "  gpushare:tenants:\n    - {name: vision, pools: [t4], quota: {nvidia.com/gpu.shared: 4}}\n",
        ("gpushare:pools[0].sharing.replicas: expected a whole number 2 or more, got a string 'four'",), 1),
    Bad("section_key_at_the_top_names_its_section",
        MINIMAL_STACK_YAML + "  gpushare:migStrategy: mixed\n",
        ("gpushare:migStrategy: unknown key: `migStrategy` is a key of gpushare:operator (did you mean "
         "'gpushare:operator.migStrategy'?)", "gpushare:operator:\n        migStrategy: ..."), 1),
    Bad("pool_key_at_the_top_names_the_pools_entries",
        MINIMAL_STACK_YAML + "  gpushare:vmSize: x\n",
        ("gpushare:vmSize: unknown key: `vmSize` is a key of each entry of gpushare:pools",), 1),
    Bad("top_level_key_in_another_case_is_that_key",
        MINIMAL_STACK_YAML.replace("gpushare:pools:", "gpushare:Pools:"),
        ("gpushare:Pools: unknown key (did you mean 'gpushare:pools'?)",), 1),
    Bad("rejects_secret_location",
        MINIMAL_STACK_YAML.replace("azure-native:location: westeurope", "azure-native:location: {secure: AAAB}"),
        ("azure-native:location: must not be a secret",), 1),
    Bad("rejects_misindented_autoscale", MINIMAL_STACK_YAML + "      autoscale:\n      min: 1\n      max: 2\n",
        ("gpushare:pools[0].autoscale: is empty", "gpushare:pools[0].min: `min` is a key of `autoscale`",
         "check the indentation"), 3),
    Bad("rejects_retired_size", MINIMAL_STACK_YAML.replace(T4, "Standard_NC6s_v3"),
        ("gpushare:pools[0].vmSize: Standard_NC6s_v3", "was retired on 2025-09-30", f"use {T4}"), 1),
    Bad("rejects_several_problems", SEVERAL_PROBLEMS, (
        "  - azure-native:location: use the region's programmatic name, got 'West Europe'; write 'westeurope'",
        "  - gpushare:cluster.kubernetesVersion: YAML reads an unquoted version as a number",
        "  - gpushare:pools[0].mig: Standard_NC4as_T4_v3 (NVIDIA T4 16GB) does not support MIG",
        "  - gpushare:pools[0].count: expected a whole number",
        "  - gpushare:pools[1].vmSize: Standard_NC6s_v3 (NCv3, NVIDIA V100 16GB) was retired",
        "  - gpushare:pools[2].sharing.replicas: must be 2 or more",
        "  - gpushare:pools[2].autoscale: min (3) is greater than max (1)",
        "  - gpushare:pools[3].sharing.strategy: mps cannot be used while gpushare:operator.migStrategy is mixed",
        "  - gpushare:pools[3].name: pool name 't4' is already used by gpushare:pools[0]",
    ), 9),
]


@pytest.fixture(autouse=True)
def plain_output(monkeypatch):
    """Colour is off for captured streams anyway; make sure the environment cannot force it on."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.fixture
def program_must_not_run(monkeypatch):
    calls = []

    def run_program(*args, **kwargs):
        calls.append(args)
        pytest.fail("the Pulumi program ran for a stack file that does not validate")

    monkeypatch.setattr(gpushare.render.mock_engine, "run_program", run_program)
    return calls


def assert_config_error(capsys, code: int, source: str, count: int, fragments: tuple[str, ...]) -> str:
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "", "nothing may reach stdout for an invalid stack (--json consumers read it)"
    assert "Traceback" not in err
    noun = "error" if count == 1 else "errors"
    assert err.startswith(f"error: {source}: {count} configuration {noun}\n"), err
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in:\n{err}"
    assert err.count("\n  - ") == count, err
    return err


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("case", BAD, ids=[c.id for c in BAD])
def test_plan_rejects_bad_stack_file(tmp_path, capsys, program_must_not_run, case: Bad, json_flag):
    path = write_stack(tmp_path, case.text)
    code = main(["plan", str(path), *json_flag])
    assert_config_error(capsys, code, str(path), case.count, case.fragments)
    assert program_must_not_run == []


def test_plan_rejects_unknown_stack_name(capsys, program_must_not_run):
    code = main(["plan", "nosuchstack"])
    assert_config_error(capsys, code, str(resolve_stack_file("nosuchstack")), 1,
                        ("(file): no such stack file",))


def test_plan_rejects_missing_stack_path(tmp_path, capsys, program_must_not_run):
    path = tmp_path / "Pulumi.gone.yaml"
    code = main(["plan", str(path)])
    assert_config_error(capsys, code, str(path), 1, ("no such stack file",))


def test_plan_unknown_stack_name_lists_the_available_stacks(capsys):
    code = main(["plan", "nosuchstack"])
    err = capsys.readouterr().err
    assert code == 2
    hint = [line for line in err.splitlines() if line.startswith("hint: ")]
    assert len(hint) == 1, err
    err = hint[0]
    stacks = available_stacks()
    assert stacks and all(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", err) for name in stacks), err


@pytest.mark.parametrize("command", ["plan", "preflight", "verify"])
@pytest.mark.parametrize("typed, meant", [("dve", "dev"), ("prdo", "prod"), ("contoso-prd", "contoso-prod")])
def test_misspelt_stack_name_gets_did_you_mean(capsys, command, typed, meant):
    """Every command that takes STACK reads it the same way, before it reaches Azure or a cluster."""
    assert main([command, typed]) == 2
    hint = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hint: ")]
    assert hint and hint[0].startswith(f"hint: did you mean {meant}? stacks in "), hint


def test_plan_unrelated_stack_name_gets_no_guess(capsys):
    assert main(["plan", "zzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_plan_missing_path_hint_does_not_place_the_stacks_in_that_directory(tmp_path, capsys):
    code = main(["plan", str(tmp_path / "Pulumi.gone.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"stacks in {tmp_path}:" not in err, err


def test_program_never_runs_for_an_invalid_stack(tmp_path, capsys, program_must_not_run):
    path = write_stack(tmp_path, MINIMAL_STACK_YAML + "      mig: MIG1g\n")
    assert main(["plan", str(path)]) == 2
    assert program_must_not_run == []
    assert "does not support MIG" in capsys.readouterr().err


def test_program_runs_for_a_valid_stack(tmp_path, monkeypatch):
    """The control for the test above: the patched `run_program` is the one `plan` calls."""

    class ProgramRan(Exception):
        pass

    seen = []

    def run_program(stack, config, **kwargs):
        seen.append((stack, config))
        raise ProgramRan

    monkeypatch.setattr(gpushare.render.mock_engine, "run_program", run_program)
    path = write_stack(tmp_path, MINIMAL_STACK_YAML, "Pulumi.good.yaml")
    with pytest.raises(ProgramRan):
        main(["plan", str(path)])
    assert seen and seen[0][0] == "good"
    assert all(isinstance(v, str) for v in seen[0][1].values())


def test_plan_as_a_subprocess_exits_2_without_traceback(tmp_path):
    path = write_stack(tmp_path, SEVERAL_PROBLEMS)
    env = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"}
    result = subprocess.run([sys.executable, "-m", "gpushare", "plan", str(path)], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {path}: 9 configuration errors\n"), result.stderr
    assert "gpushare:pools[1].vmSize: Standard_NC6s_v3" in result.stderr


@pytest.mark.parametrize("argv", [[], ["plan"], ["plan", "dev", "--jsn"], ["planx", "dev"]],
                         ids=["no-command", "no-stack", "unknown-option", "unknown-command"])
def test_usage_errors_exit_2_as_readme_documents(capsys, argv):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    assert exited.value.code == 2
    assert out == "" and err.startswith("usage: gpushare")


SECRET_SUBSCRIPTION = MINIMAL_STACK_YAML.replace(
    "azure-native:location: westeurope\n",
    "azure-native:location: westeurope\n  azure-native:subscriptionId:\n    secure: AAABAHNlY3JldC1zdWJzY3JpcHRpb24=\n")


def test_secret_subscription_id_plans_through_the_program(tmp_path, capsys):
    """Pulumi's `{secure: ...}` is a string to the provider: the offline plan (which runs the real program under
    the mock engine) accepts it; only gpushare's own keys must be plain."""
    assert main(["plan", str(write_stack(tmp_path, SECRET_SUBSCRIPTION)), "--json"]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["pools"][0]["name"] == "t4"
    assert document["azure"] == {"subscriptionId": "[secret]", "environment": "public"}
    assert "AAABAHNlY3JldC1zdWJzY3JpcHRpb24=" not in out, "the ciphertext is not shown"
    assert "configuration error" not in err


def test_secret_subscription_id_makes_preflight_ask_for_the_environment_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    assert main(["preflight", str(write_stack(tmp_path, SECRET_SUBSCRIPTION))]) == 2
    err = capsys.readouterr().err
    assert "`azure-native:subscriptionId` is a Pulumi secret" in err
    assert "export AZURE_SUBSCRIPTION_ID=<id>" in err
