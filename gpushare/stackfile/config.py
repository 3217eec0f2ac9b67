"""Stack file schema and validation: raw config in, a `StackConfig` out, or one `ConfigError` listing every problem.

The same `parse_config` serves the Pulumi program (config as the engine passes it: strings, objects JSON-encoded)
and the offline `plan` (the YAML stack file), so a stack that plans cleanly also validates under `pulumi up`.
Messages read `<key path>: <what is wrong>, got <value>; allowed: <values>` plus the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.stackfile.checks import Checker, did_you_mean, optional
from gpushare.stackfile.cluster_config import parse_cluster
from gpushare.stackfile.files import StackFile, read_stack_file, stack_name_for
from gpushare.stackfile.keys import (
    CLUSTER_KEY,
    ENVIRONMENT_KEY,
    GUARD_KEY,
    NS,
    OPERATOR_KEY,
    POOLS_KEY,
    PREFLIGHT_KEY,
    PROJECT_KEYS,
    TENANTS_KEY,
)
from gpushare.stackfile.model import (
    GuardMode,
    PreflightMode,
    StackConfig,
)
from gpushare.stackfile.network_config import check_pool_subnets
from gpushare.stackfile.operator_config import parse_operator
from gpushare.stackfile.pool_config import parse_pools
from gpushare.stackfile.stack_settings import (
    check_region_cloud,
    closest_namespaced_key,
    parse_azure,
    parse_guard_mode,
    parse_location,
    parse_preflight_mode,
)
from gpushare.stackfile.tenant_config import parse_tenants


def parse_config(raw: dict[str, Any], *, source: str, stack: str,
                 file_problems: tuple[ConfigProblem, ...] = ()) -> StackConfig:
    """Validate decoded config (`{"gpushare:pools": [...], ...}`) and build the stack, or raise `ConfigError`.

    `file_problems` are those already found in the stack file around `config:`, reported together with these.
    """
    c = Checker()
    c.problems.extend(file_problems)
    secret_keys = set()
    for key, value in raw.items():
        if ":" not in key:
            c.add(key, f"config keys need a namespace{closest_namespaced_key(key)}")
        elif key.startswith(f"{NS}:") and key not in PROJECT_KEYS:
            c.add(key, f"unknown key{did_you_mean(key, PROJECT_KEYS)}; allowed: {', '.join(PROJECT_KEYS)}")
        elif key.startswith(f"{NS}:") and isinstance(value, dict) and set(value) == {"secure"}:
            c.add(key, "must not be a secret: gpushare settings are shown in plans and previews")
            secret_keys.add(key)
    reported = len(c.problems)
    location = parse_location(c, raw)
    cluster = parse_cluster(c, raw.get(CLUSTER_KEY))
    operator = parse_operator(c, raw.get(OPERATOR_KEY))
    pools = parse_pools(c, raw.get(POOLS_KEY), operator)
    if cluster is not None:
        check_pool_subnets(c, cluster.network, raw.get(POOLS_KEY), pools)
    guard = optional(raw, GUARD_KEY, lambda v: parse_guard_mode(c, v), GuardMode.STRICT)
    tenants = optional(raw, TENANTS_KEY,
                        lambda v: parse_tenants(c, v, raw.get(POOLS_KEY), pools, operator, cluster), ())
    preflight = optional(raw, PREFLIGHT_KEY, lambda v: parse_preflight_mode(c, v), PreflightMode.STRICT)
    azure = parse_azure(c, raw)
    check_region_cloud(c, location, azure.environment, ENVIRONMENT_KEY in raw)
    # A secret section is reported once above; what parsing its ciphertext found would point at the wrong fix.
    c.problems[reported:] = [p for p in c.problems[reported:]
                             if not any(p.path == key or p.path.startswith(f"{key}.") for key in secret_keys)]
    if c.problems:
        raise ConfigError(source, c.problems)
    assert cluster is not None  # any path that leaves it None recorded a problem
    return StackConfig(source=source, stack=stack, location=location, cluster=cluster, operator=operator,
                       pools=pools, guard=guard, preflight=preflight, azure=azure, tenants=tenants)


def decode_engine_config(values: dict[str, str]) -> dict[str, Any]:
    """Config as the Pulumi engine hands it to the program (objects JSON-encoded strings) -> Python values."""
    decoded: dict[str, Any] = {}
    for key, value in values.items():
        try:
            decoded[key] = json.loads(value) if key.startswith(f"{NS}:") else value
        except (TypeError, json.JSONDecodeError):
            decoded[key] = value
    return decoded


def encode_engine_config(raw: dict[str, Any]) -> dict[str, str]:
    """The inverse: what the Pulumi CLI passes the program for a stack file's `config:` mapping."""
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in raw.items()}


def parse_stack_file(stack_file: StackFile) -> StackConfig:
    return parse_config(stack_file.config, source=str(stack_file.path), stack=stack_name_for(stack_file.path),
                        file_problems=stack_file.problems)


def load_stack_file(path: Path) -> StackConfig:
    return parse_stack_file(read_stack_file(path))
