"""`--read-deadline SECONDS`, on every command that reads Azure, the prices API or Prometheus: the one deadline all
of the command's remote reads keep (`gpushare.azure.remote_read`), started when the command starts."""

from __future__ import annotations

import argparse
import os

from gpushare.azure.remote_read import (
    DEFAULT_DEADLINE_SECONDS,
    ReadDeadline,
    ReadDeadlineSettingError,
    deadline_seconds,
)
from gpushare.model.environment_variables import READ_DEADLINE_ENV


def _seconds(text: str) -> float:
    try:
        return deadline_seconds(text, "--read-deadline")
    except ReadDeadlineSettingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_read_deadline_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--read-deadline", metavar="SECONDS", type=_seconds, default=None,
        help=f"every remote read of the command, retries and waits included, ends within this many seconds (exit 4 "
             f"past it; default {READ_DEADLINE_ENV}, else {DEFAULT_DEADLINE_SECONDS:.0f})")


def read_deadline(args: argparse.Namespace) -> ReadDeadline:
    """The command's deadline, created (and started) on first use and shared by every later read."""
    if getattr(args, "deadline", None) is None:
        args.deadline = ReadDeadline.from_environ(os.environ, getattr(args, "read_deadline", None))
    return args.deadline
