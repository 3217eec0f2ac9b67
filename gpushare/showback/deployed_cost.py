"""The cost the deployed showback rules and dashboard carry: the plan's `cost` at the saved price answer
`gpushare:metrics.prices` names. The program has no other price sheet (it reads no prices API), so without the key the
deployed group has no idle cost rules and the dashboard no cost panels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpushare.azure.prices import PricesError, read_saved_answer
from gpushare.errors import ConfigError, ConfigProblem
from gpushare.model.keys import METRICS_KEY
from gpushare.model.stack import StackConfig
from gpushare.sharing.pool_facts import PoolFactsByName
from gpushare.showback.cost import stack_cost

PRICES_PATH = f"{METRICS_KEY}.prices"


def saved_prices_path(stack: StackConfig) -> Path | None:
    """The file `gpushare:metrics.prices` names, relative to the stack file's folder (to the working directory when
    the config came from a program rather than a file)."""
    if stack.metrics is None or stack.metrics.prices is None:
        return None
    path = Path(stack.metrics.prices)
    source = Path(stack.source)
    return path if path.is_absolute() or not source.is_file() else source.parent / path


def deployed_cost(stack: StackConfig, facts: PoolFactsByName | None = None) -> dict[str, Any] | None:
    """The plan's `cost` object at the saved prices, None without `gpushare:metrics.prices`. A file that cannot be
    read, is for another region or leaves a price empty is a config error naming the key, raised before anything
    registers."""
    path = saved_prices_path(stack)
    if path is None:
        return None
    try:
        return stack_cost(stack, read_saved_answer(path, stack.location, None), facts=facts)
    except PricesError as exc:
        hint = f"; {exc.hint}" if exc.hint else ""
        raise ConfigError(stack.source, [ConfigProblem(
            PRICES_PATH, f"{exc}{hint} (or remove the key: the deployed rules then carry no cost)")]) from None
