"""gpushare's own Pulumi program (what the project's `__main__.py` runs, and `gpushare plan` under the mock engine):
the stack's config as the engine passes it, `deploy()`, and gpushare's stack outputs."""

from __future__ import annotations

import os
from pathlib import Path

import pulumi
from pulumi.runtime import config as runtime_config

from gpushare.components.deployment import deploy
from gpushare.errors import GpushareError
from gpushare.model.environment_variables import STACK_FILE_ENV
from gpushare.stackfile.config import decode_engine_config
from gpushare.stackfile.project import find_project


def program() -> None:
    """gpushare's Pulumi program for one stack of the project: its config as the engine passes it, `deploy()`,
    the stack outputs."""
    stack = pulumi.get_stack()
    # The engine hands the program every config key; reading them all is what lets a misspelt key be reported.
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    # A secret reaches the program decrypted, its key listed as secret: put back the `{secure: ...}` shape a stack
    # file shows, so validation treats it the same offline and under the engine (a gpushare key must not be one).
    secret = {*runtime_config.get_config_secret_keys_env(), *(k for k in raw if runtime_config.is_config_secret(k))}
    values = {**decode_engine_config({k: v for k, v in raw.items() if k not in secret}),
              **{k: {"secure": str(raw[k])} for k in secret if k in raw}}
    deployment = deploy(values, source=_stack_file_shown(stack), stack=stack)
    for name, value in deployment.stack_outputs().items():
        pulumi.export(name, value)


def _stack_file_shown(stack: str) -> str:
    """The file messages name: the one `plan` was given, else the stack's file in the project the engine runs in
    (Pulumi runs the program in the project directory)."""
    if given := os.environ.get(STACK_FILE_ENV):
        return given
    try:
        project = find_project()
    except GpushareError as exc:
        # A project file gpushare cannot read stops the run here with its message, not a traceback.
        raise pulumi.RunError(str(exc)) from None
    return str(project.stack_file(stack) if project else Path(f"Pulumi.{stack}.yaml"))
