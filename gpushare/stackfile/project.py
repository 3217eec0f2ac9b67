"""Where stack files live: `stacks/Pulumi.<stack>.yaml` beside Pulumi.yaml (its `stackConfigDir`)."""

from __future__ import annotations

from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]
STACKS_DIR = PROJECT_DIR / "stacks"
STACK_FILE_ENV = "GPUSHARE_STACK_FILE"
"""Set by `plan` while it runs the program, so the program's messages name the file `plan` was given."""


def resolve_stack_file(stack_or_path: str) -> Path:
    """A stack name (`prod`) -> `stacks/Pulumi.prod.yaml`; anything that looks like a path is taken as one."""
    candidate = Path(stack_or_path)
    if candidate.suffix in (".yaml", ".yml") or len(candidate.parts) > 1:
        return candidate
    path = STACKS_DIR / f"Pulumi.{stack_or_path}.yaml"
    # Shown in every message: `stacks/Pulumi.prod.yaml` when run from the project, as users type it.
    return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def available_stacks() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))
