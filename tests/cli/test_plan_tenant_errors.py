"""`plan` on a stack file with bad tenants: exit 2, every tenant problem named by its key, the program never run."""

from __future__ import annotations

from gpushare.cli import main
from tests.cli.test_plan_errors import assert_config_error, program_must_not_run  # noqa: F401
from tests.stack_files import MINIMAL_STACK_YAML, write_stack

BAD_TENANTS = MINIMAL_STACK_YAML + """\
  gpushare:tenants:
    - name: default
      pools: [t4, a100]
      quota: {nvidia.com/gpu: 0}
    - name: ml
      pools: [t4]
      quota: {nvidia.com/gpu.shared: 2}
      groups: [ml-admins]
    - name: ml
      pools: [t4]
"""


def test_plan_names_every_tenant_problem(tmp_path, capsys, program_must_not_run):  # noqa: F811
    path = write_stack(tmp_path, BAD_TENANTS)
    code = main(["plan", str(path), "--json"])
    assert_config_error(capsys, code, str(path), 6, (
        "  - gpushare:tenants[0].name: 'default' is reserved",
        "  - gpushare:tenants[0].pools[1]: unknown pool 'a100'; pools in gpushare:pools: t4",
        "  - gpushare:tenants[0].quota.nvidia.com/gpu: must be 1 or more",
        "  - gpushare:tenants[1].quota.nvidia.com/gpu.shared: none of this tenant's pools advertises "
        "nvidia.com/gpu.shared (did you mean 'nvidia.com/gpu'?); they advertise: nvidia.com/gpu (t4)",
        "  - gpushare:tenants[1].groups[0]: expected an Entra ID group object ID",
        "  - gpushare:tenants[2].name: tenant 'ml' is already defined by gpushare:tenants[1]",
    ))
    assert program_must_not_run == []
