"""`plan`'s upgrade line counts the nodes AKS can take offline, never more than the pool has."""

from __future__ import annotations

from gpushare.cli import main
from gpushare.stackfile.project import resolve_stack_file
from tests.stack_files import write_stack


def test_max_unavailable_above_the_pool_size_is_the_whole_pool(tmp_path, capsys):
    path = write_stack(tmp_path, resolve_stack_file("dev").read_text().replace(
        "      count: 1", "      count: 2\n      upgrade: {maxSurge: 0, maxUnavailable: 3}"), "Pulumi.up.yaml")
    assert main(["plan", str(path)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("  t4mps upgrade:"))
    # dev autoscales t4ts, so its shared pools advertise nvidia.com/gpu (renameByDefault defaults to false).
    assert line == ("  t4mps upgrade: 2 nodes at a time offline: the whole pool (8 x nvidia.com/gpu), no extra "
                    "VM (maxSurge 0, maxUnavailable 3)")
