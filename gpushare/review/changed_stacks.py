"""Which stacks a change affects, for a workflow's matrix: `stacks --changed-since REF`.

Files are those `git diff --name-only --no-renames REF...HEAD` lists, run in the project directory with
`--relative`: the three dots diff HEAD against the merge base of REF and HEAD, the same files a pull request shows
(changes that landed on the base branch since the PR branched off do not count). A rename is a delete and an add.

- `stacks/Pulumi.<stack>.yaml` (in the project's `stackConfigDir`) added or changed -> that stack;
- deleted -> not in the list (a stack without its file can be neither planned nor deployed), reported separately
  with the steps that remove its resources (`deleted_stack_steps`): they stay in Azure until someone destroys them;
- documentation (`*.md`, `docs/`, `LICENSE`), tests (`tests/`) and benchmarks -> nothing;
- anything else (the program, `gpushare/` (components included), `Pulumi.yaml`, `requirements*.txt`, workflows, files we
  do not know) -> every stack whose file exists at HEAD: when unsure, preview more, never less.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gpushare.errors import GpushareError
from gpushare.stackfile.project import Project

STACK_NAME = r"(?P<stack>[A-Za-z0-9_.-]+)"
"""Pulumi stack names are letters, digits, `-`, `_` and `.`; a file named otherwise is no stack (and, being
unknown, selects every stack). Names flow into paths, comment markers and environment names in the workflows."""
NULL_SHA = "0" * 40
"""What GitHub sends as `github.event.before` when a push creates the branch: no base, so every stack."""
_NEUTRAL_DIRS = ("docs/", "tests/", "benchmarks/")
_NEUTRAL_NAMES = re.compile(r"^(LICENSE|NOTICE|CHANGELOG|CODEOWNERS)(\..*)?$|\.(md|rst|txt\.md)$", re.IGNORECASE)


class GitError(GpushareError):
    """git could not say what changed, or the stack asked for does not exist."""

    exit_code = 2


@dataclass(frozen=True)
class ChangedStacks:
    stacks: tuple[str, ...]
    """Stacks to preview or deploy, sorted."""
    deleted: tuple[str, ...]
    """Stacks whose file this change deletes."""
    reason: str
    """Why, in a line: which file made every stack count, or which stack files changed."""


def _git(args: list[str], cwd: Path) -> str:
    try:
        result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed; `stacks --changed-since` reads the change from git") from None
    if result.returncode != 0:
        error = GitError(f"git {' '.join(args)} failed: {result.stderr.strip() or result.returncode}")
        error.hint = ("the ref must exist in this clone: in GitHub Actions check out with `fetch-depth: 0` "
                      "(or fetch the base), and pass a commit SHA or a ref such as origin/main")
        raise error
    return result.stdout


def changed_files(ref: str, cwd: Path) -> list[tuple[str, str]]:
    """(status letter, path relative to `cwd`) for every file changed between the merge base of REF and HEAD."""
    out = _git(["diff", "--name-status", "--no-renames", "--relative", f"{ref}...HEAD", "--"], cwd)
    rows = []
    for line in out.splitlines():
        status, _, path = line.partition("\t")
        if path:
            rows.append((status[:1], path))
    return rows


def stack_file_pattern(stacks_dir: str) -> re.Pattern[str]:
    """Stack files in `stacks_dir` (relative to the project, as git lists paths; `.` for the project itself)."""
    prefix = "" if stacks_dir in ("", ".") else f"{re.escape(stacks_dir)}/"
    return re.compile(rf"^{prefix}Pulumi\.{STACK_NAME}\.ya?ml$")


def _stacks_dir(project: Project) -> str:
    return Path(os.path.relpath(project.stacks_dir, project.dir)).as_posix()


def stacks_in(project: Project) -> list[str]:
    pattern = stack_file_pattern("")
    return sorted(m["stack"] for p in project.stacks_dir.glob("Pulumi.*.y*ml") if (m := pattern.match(p.name)))


def is_neutral(path: str) -> bool:
    """A file that cannot change what any stack deploys."""
    return path.startswith(_NEUTRAL_DIRS) or bool(_NEUTRAL_NAMES.search(PurePosixPath(path).name))


def affected_stacks(files: list[tuple[str, str]], existing: list[str], stacks_dir: str) -> ChangedStacks:
    stack_file = stack_file_pattern(stacks_dir)
    stacks: set[str] = set()
    deleted: set[str] = set()
    everything = None
    for status, path in files:
        match = stack_file.match(path)
        if match:
            (deleted if status == "D" else stacks).add(match["stack"])
        elif not is_neutral(path) and everything is None:
            everything = path
    if everything is not None:
        return ChangedStacks(tuple(existing), tuple(sorted(deleted)), f"{everything} changed: every stack")
    stacks &= set(existing)
    reason = f"stack files changed: {', '.join(sorted(stacks))}" if stacks else "no stack affected"
    return ChangedStacks(tuple(sorted(stacks)), tuple(sorted(deleted)), reason)


def deleted_stack_steps(stack: str, ref: str) -> str:
    """What to do about a stack whose file a change deletes. Its cluster and GPU pools are protected, so a plain
    `pulumi destroy` refuses them; and `--run-program` (the fresh Kubernetes token, docs/security.md "Hardened
    cluster and access") runs the program, which needs the stack file: so restore the file from REF (the base, which
    has it)."""
    return (
        f"stack {stack}: its file was deleted, so it is neither previewed nor deployed; its cluster and GPU pools "
        f"stay in Azure (protected). To remove them, from a checkout: `git checkout {ref} -- "
        f"stacks/Pulumi.{stack}.yaml`, then `pulumi state unprotect --all --stack {stack} -y && "
        f"pulumi destroy --run-program --stack {stack} && pulumi stack rm --stack {stack}`, then delete the file "
        f"again (`git rm stacks/Pulumi.{stack}.yaml`). Or destroy first and delete the file after."
    )


def changed_stacks(ref: str, project: Project) -> ChangedStacks:
    if ref == NULL_SHA:
        return ChangedStacks(tuple(stacks_in(project)), (), "no base commit (a new branch): every stack")
    return affected_stacks(changed_files(ref, project.dir), stacks_in(project), _stacks_dir(project))


def named_stack(name: str, project: Project) -> ChangedStacks:
    """One stack asked for by name (a manual deploy): it must have its file."""
    existing = stacks_in(project)
    if name not in existing:
        relative = Path(_stacks_dir(project), f"Pulumi.{name}.yaml").as_posix()
        error = GitError(f"stack {name!r}: no {relative} in {project.dir.resolve()}")
        error.hint = f"stacks here: {', '.join(existing) or 'none'}"
        raise error
    return ChangedStacks((name,), (), f"stack {name} asked for by name")
