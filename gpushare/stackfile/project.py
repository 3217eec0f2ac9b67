"""Where stack files live: the Pulumi project's `Pulumi.yaml`, found from the current directory upwards (as the
Pulumi CLI finds it) or given by `--project DIR`, and its `stackConfigDir` (default: the project directory).

A STACK that looks like a path (`.yaml`/`.yml`, or a directory part) is a file and needs no project; a name
(`prod`) is `Pulumi.prod.yaml` in the project's stack directory, so `gpushare plan prod` works from any directory
inside the project and a path works from anywhere.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpushare.errors import GpushareError

PROJECT_FILE = "Pulumi.yaml"


class ProjectError(GpushareError):
    """No Pulumi project to resolve a stack name in, or its Pulumi.yaml cannot be read."""

    exit_code = 2


@dataclass(frozen=True)
class Project:
    """A Pulumi project directory and the directory its stack files are in."""

    dir: Path
    stacks_dir: Path

    def stack_file(self, stack: str) -> Path:
        return self.stacks_dir / f"Pulumi.{stack}.yaml"

    def stacks(self) -> list[str]:
        return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in self.stacks_dir.glob("Pulumi.*.yaml"))


def project_at(directory: Path) -> Project:
    """The project whose `Pulumi.yaml` is in `directory` (`--project DIR`)."""
    path = directory / PROJECT_FILE
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        error = ProjectError(f"{directory}: no {PROJECT_FILE} here, so it is not a Pulumi project")
        error.hint = "pass the directory that holds Pulumi.yaml, or a stack file's path as STACK"
        raise error from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ProjectError(f"{path}: cannot be read: {exc}") from None
    except RecursionError:  # the parser recurses per level; no project file is nested that deep
        raise ProjectError(f"{path}: cannot be read: nested too deeply (over {sys.getrecursionlimit()} levels)") from None
    # Pulumi resolves `stackConfigDir` against the project directory (Pulumi docs, "Pulumi.yaml project file").
    configured = document.get("stackConfigDir") if isinstance(document, dict) else None
    if configured is not None and not isinstance(configured, str):
        raise ProjectError(f"{path}: stackConfigDir must be a directory name, got {configured!r}")
    return Project(dir=directory, stacks_dir=directory / configured if configured else directory)


def find_project(start: Path | None = None) -> Project | None:
    """The nearest project at or above `start` (default: the current directory), or None outside any project."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / PROJECT_FILE).is_file():
            return project_at(_shown(directory))
    return None


def current_project(project_dir: Path | None = None) -> Project:
    """`--project DIR`'s project, else the one found from the current directory; an error outside any project."""
    if project_dir is not None:
        return project_at(project_dir)
    project = find_project()
    if project is None:
        error = ProjectError(f"no {PROJECT_FILE} in {Path.cwd()} or any directory above it, so a stack name "
                             "cannot be resolved")
        error.hint = "run inside the project, pass --project DIR, or give the stack file's path"
        raise error
    return project


def is_stack_path(stack_or_path: str) -> bool:
    """`stacks/Pulumi.prod.yaml`, `x.yml`, `./prod`: a path; `prod`: a stack name."""
    candidate = Path(stack_or_path)
    return candidate.suffix in (".yaml", ".yml") or len(candidate.parts) > 1


def resolve_stack_file(stack_or_path: str, project: Project | None = None) -> Path:
    """A stack name (`prod`) -> its file in `project` (default: found from the current directory); anything that
    looks like a path is taken as one."""
    if is_stack_path(stack_or_path):
        return Path(stack_or_path)
    return (project or current_project()).stack_file(stack_or_path)


def available_stacks(project: Project | None = None) -> list[str]:
    return (project or current_project()).stacks()


def _shown(directory: Path) -> Path:
    """Relative to the current directory when inside it, as users type paths (`stacks/Pulumi.prod.yaml`, not
    the absolute path, in every message)."""
    cwd = Path.cwd()
    return directory.relative_to(cwd) if directory.is_relative_to(cwd) else directory
