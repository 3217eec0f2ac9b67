"""Reading a command's input file (or stdin) with a clear error instead of a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

from gpushare.errors import GpushareError


class InputFileError(GpushareError):
    exit_code = 2


def read_input(name: str) -> tuple[str, str]:
    """(text, name for messages). `-` reads stdin."""
    if name == "-":
        return sys.stdin.read(), "stdin"
    try:
        return Path(name).read_text(encoding="utf-8"), name
    except FileNotFoundError:
        raise InputFileError(f"{name}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{name}: cannot be read ({exc})") from None
