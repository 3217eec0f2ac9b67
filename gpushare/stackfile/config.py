"""Stack file schema and validation: raw config in, a `StackConfig` out, or one `ConfigError` listing every problem.

The same `parse_config` serves the Pulumi program (config as the engine passes it: strings, objects JSON-encoded)
and the offline `plan` (the YAML stack file), so a stack that plans cleanly also validates under `pulumi up`.
Messages read `<key path>: <what is wrong>, got <value>; allowed: <values>` plus the fix.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.model.keys import (
    CLUSTER_KEY,
    ENVIRONMENT_KEY,
    GUARD_KEY,
    METRICS_KEY,
    NS,
    OPERATOR_KEY,
    PLATFORM_KEY,
    POOLS_KEY,
    PREFLIGHT_KEY,
    QUEUES_KEY,
    TENANTS_KEY,
)
from gpushare.model.stack import Queues, StackConfig
from gpushare.stackfile.autoscaler_check import check_autoscaler_readiness
from gpushare.stackfile.checks import Checker, did_you_mean, is_secure_value, parse_if_set
from gpushare.stackfile.cluster_config import CLUSTER_FIELD, CLUSTER_KEYS, parse_cluster
from gpushare.stackfile.declarations import Section
from gpushare.stackfile.dra_pools import dra_problems
from gpushare.stackfile.files import StackFile, read_stack_file, stack_name_for
from gpushare.stackfile.fleet_membership import FLEET, with_fleet_tenants
from gpushare.stackfile.metrics_config import METRICS_FIELD, parse_metrics
from gpushare.stackfile.network_config import check_pool_subnets
from gpushare.stackfile.operator_config import OPERATOR_FIELD, OPERATOR_KEYS, parse_operator
from gpushare.stackfile.platform_config import PLATFORM_FIELD, PLATFORM_KEYS, parse_platform
from gpushare.stackfile.pool_config import POOL_KEYS, POOLS_FIELD, parse_pools
from gpushare.stackfile.queue_config import QUEUES_FIELD, QUEUES_KEYS, parse_queues, queue_problems
from gpushare.stackfile.stack_settings import (
    ENVIRONMENT,
    GUARD,
    LOCATION,
    PREFLIGHT,
    SUBSCRIPTION,
    check_region_cloud,
    closest_namespaced_key,
    closest_namespaced_key_name,
    parse_azure,
    parse_guard_mode,
    parse_location,
    parse_preflight_mode,
)
from gpushare.stackfile.tenant_config import TENANT_KEYS, TENANTS_FIELD, parse_tenants

CONFIG = Section((LOCATION, SUBSCRIPTION, ENVIRONMENT, CLUSTER_FIELD, OPERATOR_FIELD, POOLS_FIELD, GUARD, PREFLIGHT,
                  TENANTS_FIELD, PLATFORM_FIELD, QUEUES_FIELD, METRICS_FIELD, FLEET), closed=False)
"""A stack file's `config:`: the keys gpushare reads. Other providers' keys (`<namespace>:<key>`) are left alone;
a `gpushare:` key not declared here is refused."""
GPUSHARE_KEYS = tuple(key for key in CONFIG.keys if key.startswith(f"{NS}:"))


def parse_config(raw: dict[str, Any], *, source: str, stack: str,
                 file_problems: tuple[ConfigProblem, ...] = ()) -> StackConfig:
    """Validate decoded config (`{"gpushare:pools": [...], ...}`) and build the stack, or raise `ConfigError`.

    `file_problems` are those already found in the stack file around `config:`, reported together with these.
    """
    raw, fleet_problems, fleet_manager = with_fleet_tenants(raw, source, stack)
    c = Checker()
    c.problems.extend(file_problems)
    c.problems.extend(fleet_problems)
    secret_keys = set()
    for key, value in raw.items():
        if ":" not in key:
            c.add(key, f"config keys need a namespace{closest_namespaced_key(key)}")
        elif key.startswith(f"{NS}:") and key not in GPUSHARE_KEYS:
            c.add(key, unknown_project_key(key))
        elif key.startswith(f"{NS}:") and is_secure_value(value):
            c.add(key, "must not be a secret: gpushare settings are shown in plans and previews")
            secret_keys.add(key)
    raw = read_misspelt_keys_as_meant(raw)
    reported = len(c.problems)
    location = parse_location(c, raw)
    cluster = parse_cluster(c, raw.get(CLUSTER_KEY))
    operator = parse_operator(c, raw.get(OPERATOR_KEY))
    pools = parse_pools(c, raw.get(POOLS_KEY), operator)
    if cluster is not None:
        check_pool_subnets(c, cluster.network, raw.get(POOLS_KEY), pools, cluster.existing)
        check_autoscaler_readiness(c, raw.get(POOLS_KEY), pools, operator, cluster)
    guard = parse_if_set(raw, GUARD_KEY, lambda v: parse_guard_mode(c, v), GUARD.default)
    tenants = parse_if_set(raw, TENANTS_KEY,
                           lambda v: parse_tenants(c, v, raw.get(POOLS_KEY), pools, operator, cluster), ())
    platform = parse_if_set(raw, PLATFORM_KEY, lambda v: parse_platform(c, v, raw.get(POOLS_KEY), tenants), ())
    metrics = parse_metrics(c, raw[METRICS_KEY]) if raw.get(METRICS_KEY) is not None else None
    preflight = parse_if_set(raw, PREFLIGHT_KEY, lambda v: parse_preflight_mode(c, v), PREFLIGHT.default)
    queues = parse_if_set(raw, QUEUES_KEY, lambda v: parse_queues(c, v), Queues())
    azure = parse_azure(c, raw)
    check_region_cloud(c, location, azure.environment, ENVIRONMENT_KEY in raw)
    # A secret section is reported once above; what parsing its ciphertext found would point at the wrong fix.
    c.problems[reported:] = [p for p in c.problems[reported:]
                             if not any(p.path == key or p.path.startswith(f"{key}.") for key in secret_keys)]
    if c.problems:
        raise ConfigError(source, c.problems)
    assert cluster is not None  # any path that leaves it None recorded a problem
    validated = StackConfig(source=source, stack=stack, location=location, cluster=cluster, operator=operator,
                            pools=pools, guard=guard, preflight=preflight, azure=azure, tenants=tenants,
                            platform=platform, queues=queues, metrics=metrics, fleet_manager=fleet_manager)
    # Judged on the whole stack (a pool's taints include its tenant's): what Kueue's CRDs would refuse, and a DRA
    # pool on a Kubernetes without resource.k8s.io/v1.
    if problems := queue_problems(validated) + dra_problems(validated):
        raise ConfigError(source, problems)
    return validated


SECTION_KEYS: dict[str, tuple[str, ...]] = {
    CLUSTER_KEY: CLUSTER_KEYS, OPERATOR_KEY: OPERATOR_KEYS, POOLS_KEY: POOL_KEYS, TENANTS_KEY: TENANT_KEYS,
    PLATFORM_KEY: PLATFORM_KEYS, QUEUES_KEY: QUEUES_KEYS,
}
"""Each section's own keys, for a key written one level too high (`gpushare:migStrategy`)."""
LIST_SECTIONS = (POOLS_KEY, TENANTS_KEY)


def section_of_bare_key(key: str) -> str | None:
    """`gpushare:migStrategy` -> `gpushare:operator`: the one section whose own key `key` names, written at the
    top level (any case); None when no section, or several, have such a key, or when the key is a top-level key
    in another case (`gpushare:Pools` means gpushare:pools, not a tenant's `pools`)."""
    if key.lower() in (k.lower() for k in GPUSHARE_KEYS):
        return None
    bare = key.split(":", 1)[1].lower()
    sections = [section for section, keys in SECTION_KEYS.items() if bare in (k.lower() for k in keys)]
    return sections[0] if len(sections) == 1 else None


def unknown_project_key(key: str) -> str:
    """The message for an unknown `gpushare:` key: a section's own key written at the top level says where it
    goes (a spelling match would suggest an unrelated section), else the closest top-level key."""
    section = section_of_bare_key(key)
    if section:
        bare = key.split(":", 1)[1]
        written = next(k for k in SECTION_KEYS[section] if k.lower() == bare.lower())
        where = (f"a key of each entry of {section}" if section in LIST_SECTIONS else f"a key of {section}")
        example = (f"{section}:\n        - {{..., {written}: ...}}" if section in LIST_SECTIONS
                   else f"{section}:\n        {written}: ...")
        return f"unknown key: `{written}` is {where} (did you mean '{section}.{written}'?); write, e.g.\n      {example}"
    return f"unknown key{did_you_mean(key, GPUSHARE_KEYS)}; allowed: {', '.join(GPUSHARE_KEYS)}"


def _meant_key(key: str) -> str | None:
    """The project key a misspelt top-level key stands for (`gpushare:pool`, or `pool` without the namespace)."""
    if ":" not in key:
        return closest_namespaced_key_name(key)
    if key.startswith(f"{NS}:") and key not in GPUSHARE_KEYS and not section_of_bare_key(key):
        match = did_you_mean(key, GPUSHARE_KEYS)
        return next((k for k in GPUSHARE_KEYS if match == f" (did you mean {k!r}?)"), None)
    return None


def read_misspelt_keys_as_meant(raw: dict[str, Any]) -> dict[str, Any]:
    """One mistake, one error: a misspelt key (`gpushare:pool:`) is reported once where it is, and the checks that
    follow read its value as the key it stands for, so they neither call that key missing (`gpushare:pools:
    required`) nor find nothing the rest of the stack refers to (a tenant's "unknown pool"). Only when the meant
    key is absent and one key alone stands for it."""
    meant: dict[str, list[str]] = {}
    for key in raw:
        target = _meant_key(key)
        if target and target not in raw:
            meant.setdefault(target, []).append(key)
    return {**raw, **{target: raw[keys[0]] for target, keys in meant.items() if len(keys) == 1}}


def decode_engine_config(values: dict[str, str]) -> dict[str, Any]:
    """Config as the Pulumi engine hands it to the program (objects JSON-encoded strings) -> Python values."""
    decoded: dict[str, Any] = {}
    for key, value in values.items():
        try:
            decoded[key] = json.loads(value) if key.startswith(f"{NS}:") else value
        except (TypeError, ValueError):  # JSONDecodeError, or an integer past Python's 4,300 digits
            decoded[key] = value
        if not key.startswith(f"{NS}:") and isinstance(value, str) and value.startswith('{"secure"'):
            # Only offline (`plan` hands the program the stack file's `{secure: ...}` as encoded below); the real
            # engine passes a secret decrypted.
            with contextlib.suppress(json.JSONDecodeError):
                if is_secure_value(secret := json.loads(value)):
                    decoded[key] = secret
    return decoded


def encode_engine_config(raw: dict[str, Any]) -> dict[str, str]:
    """The inverse: what the Pulumi CLI passes the program for a stack file's `config:` mapping."""
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in raw.items()}


def parse_stack_file(stack_file: StackFile) -> StackConfig:
    return parse_config(stack_file.config, source=str(stack_file.path), stack=stack_name_for(stack_file.path),
                        file_problems=stack_file.problems)


def load_stack_file(path: Path) -> StackConfig:
    return parse_stack_file(read_stack_file(path))
