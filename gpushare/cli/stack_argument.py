"""The CLI's subcommands, one module each, plus what they share: the STACK argument and `--project DIR`."""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from gpushare.errors import ConfigError
from gpushare.stackfile.config import StackFile, read_stack_file
from gpushare.stackfile.project import Project, current_project, is_stack_path, resolve_stack_file

STACK_HELP = "stack name (Pulumi.STACK.yaml in the project's stackConfigDir) or path to a stack file"


def add_project_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", metavar="DIR", type=Path,
                        help="Pulumi project directory (holding Pulumi.yaml) whose stacks names refer to "
                             "(default: the nearest Pulumi.yaml from the current directory upwards)")


def add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    """STACK and `--project DIR`, the same for every command that reads one stack."""
    parser.add_argument("stack", metavar="STACK", help=STACK_HELP)
    add_project_argument(parser)


def project_argument(args: argparse.Namespace) -> Project:
    """The project a command works in: `--project DIR`, else the one found from the current directory."""
    return current_project(args.project)


def read_stack_argument(args: argparse.Namespace) -> StackFile:
    """The stack file a command's STACK names (`dev` or a path); when it does not exist, the error's hint lists the
    project's stacks and guesses a misspelt name."""
    if is_stack_path(args.stack):
        return read_stack_file(Path(args.stack))
    project = project_argument(args)
    path = resolve_stack_file(args.stack, project)
    try:
        return read_stack_file(path)
    except ConfigError as error:
        if not path.exists():
            stacks = project.stacks()
            close = difflib.get_close_matches(args.stack, stacks, n=1, cutoff=0.6)
            guess = f"did you mean {close[0]}? " if close else ""
            error.hint = f"{guess}stacks in {project.stacks_dir}: {', '.join(stacks) or 'none'}; or pass a file's path"
        raise
