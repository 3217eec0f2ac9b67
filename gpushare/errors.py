"""User-facing failures. The CLI catches `GpushareError` only; anything else is a bug and keeps its traceback."""

from __future__ import annotations

from dataclasses import dataclass


class GpushareError(Exception):
    """Base of every error a user can cause or fix. `exit_code` is what the CLI returns for it."""

    exit_code = 1
    hint: str | None = None


@dataclass(frozen=True)
class ConfigProblem:
    """One problem in a stack file: where (`path`, e.g. `gpushare:pools[1].mig`) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(GpushareError):
    """The stack file is invalid. Carries every problem found, so one run shows them all."""

    exit_code = 2

    def __init__(self, source: str, problems: list[ConfigProblem]):
        self.source = source
        self.problems = list(problems)
        count = len(self.problems)
        lines = [f"{source}: {count} configuration error{'s' if count != 1 else ''}"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


class GuardViolationError(GpushareError):
    """A stack edit would delete or replace a live GPU pool."""

    exit_code = 3


class AzureReadError(GpushareError):
    """Azure could not be read (credentials, permissions, network, service errors)."""

    exit_code = 4


class OutputError(GpushareError):
    """Stdout cannot take the command's output (a full disk, a device gone): what reached it is incomplete."""

    exit_code = 5


class ClusterAccessError(GpushareError):
    """The Kubernetes API cannot be reached, or it refuses the credentials (`gpushare verify`)."""

    exit_code = 4
