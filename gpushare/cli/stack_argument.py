"""The CLI's subcommands, one module each, plus what they share: reading the STACK argument."""

from __future__ import annotations

import difflib
from pathlib import Path

from gpushare.errors import ConfigError
from gpushare.stackfile.config import StackFile, read_stack_file
from gpushare.stackfile.project import STACKS_DIR, available_stacks, resolve_stack_file


def read_stack_argument(stack: str) -> StackFile:
    """The stack file a command's STACK names (`dev` or a path); when it does not exist, the error's hint lists the
    stacks and guesses a misspelt name."""
    path = resolve_stack_file(stack)
    try:
        return read_stack_file(path)
    except ConfigError as error:
        if not path.exists():
            stacks = available_stacks()
            given_a_name = path != Path(stack)  # `dve`, not a path to a file
            close = difflib.get_close_matches(stack, stacks, n=1, cutoff=0.6) if given_a_name else []
            guess = f"did you mean {close[0]}? " if close else ""
            error.hint = f"{guess}stacks in {STACKS_DIR}: {', '.join(stacks) or 'none'}; or pass a file's path"
        raise
