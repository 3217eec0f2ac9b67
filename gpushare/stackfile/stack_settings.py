"""The stack's other settings: the region, the Azure cloud and subscription, `gpushare:guard` and
`gpushare:preflight`."""

from __future__ import annotations

import difflib
import re
from typing import Any

from gpushare.model import regions
from gpushare.model.keys import (
    ENVIRONMENT_KEY,
    GUARD_KEY,
    LOCATION_KEY,
    PREFLIGHT_KEY,
    PROJECT_KEYS,
    SUBSCRIPTION_KEY,
)
from gpushare.model.stack import (
    AzureEnvironment,
    AzureSettings,
    GuardMode,
    PreflightMode,
)
from gpushare.stackfile.checks import GUID_RE, Checker, is_secure_value, parse_if_set, show
from gpushare.stackfile.declarations import STRING, Field

LOCATION_RE = re.compile(r"^[a-z][a-z0-9]*$")
LOCATION = Field(LOCATION_KEY, STRING, "The Azure region for the cluster, as `az account list-locations` names it "
                                       "(public, US Government and China regions; the region's cloud must be "
                                       "azure-native:environment's).",
                 required=True, enum=tuple(sorted(regions.ALL_REGIONS)), pattern=LOCATION_RE)
SUBSCRIPTION = Field(SUBSCRIPTION_KEY, STRING, "The Azure subscription (a GUID); preflight and the guard read it "
                                               "here, else from AZURE_SUBSCRIPTION_ID.",
                     default_text="the provider's", pattern=GUID_RE, examples=("3f2504e0-4f89-41d3-9a0c-0305e82c3301",),
                     rule="must be a subscription id (a GUID such as 00000000-0000-0000-0000-000000000000; "
                          "`az account show --query id -o tsv` prints yours)",
                     also=({"type": "object", "required": ["secure"], "properties": {"secure": {
                         "type": "string", "description": "Required. The value encrypted by `pulumi config set "
                                                          "--secret` (offline `plan` does not decrypt it)."}},
                            "additionalProperties": False},))
ENVIRONMENT = Field(ENVIRONMENT_KEY, STRING, "The Azure cloud the provider, the guard and preflight talk to.",
                    default=AzureSettings().environment, enum=AzureEnvironment)
GUARD = Field(GUARD_KEY, STRING, "What to do when Azure cannot be read (guard and preflight): fail (strict) or "
                                 "continue on the pools' protection alone (warn). The guard cannot be turned off.",
              default=GuardMode.STRICT, enum=GuardMode)
PREFLIGHT = Field(PREFLIGHT_KEY, STRING, "strict: a failed preflight check stops pulumi preview/up; warn: logs it; "
                                         "off: no preflight reads.",
                  default=PreflightMode.STRICT, enum=PreflightMode,
                  also=({"const": False, "description": "off, as YAML 1.1 reads an unquoted off"},))


def closest_namespaced_key_name(bare: str) -> str | None:
    """`location` -> azure-native:location, `pool` -> gpushare:pools: match on the part after the namespace."""
    by_name = {key.split(":", 1)[1].lower(): key for key in (*PROJECT_KEYS, LOCATION_KEY)}
    match = difflib.get_close_matches(bare.lower(), list(by_name), n=1, cutoff=0.6)
    return by_name[match[0]] if match else None


def closest_namespaced_key(bare: str) -> str:
    key = closest_namespaced_key_name(bare)
    return f"; did you mean {key}?" if key else f"; gpushare's keys are {', '.join((*PROJECT_KEYS, LOCATION_KEY))}"


def parse_location(c: Checker, raw: dict[str, Any]) -> str:
    value = raw.get(LOCATION_KEY)
    if is_secure_value(value):
        c.add(LOCATION_KEY, "must not be a secret: the region decides which VM sizes, zones and quota `plan` and "
                            "`preflight` check, and every plan shows it; write it in plain text, e.g. "
                            "`azure-native:location: westeurope`")
        return ""
    if value is None:
        c.add(LOCATION_KEY, "required: the Azure region for the cluster, e.g. `azure-native:location: westeurope`")
        return ""
    if isinstance(value, str) and not LOCATION_RE.match(value):
        fix = re.sub(r"[^a-z0-9]", "", value.lower())
        c.add(LOCATION_KEY, f"use the region's programmatic name, got {show(value)}; write {fix!r} "
                            f"(`az account list-locations -o table` lists them)")
        return ""
    location = c.string(value, LOCATION_KEY, LOCATION_RE, "an Azure region name such as westeurope")
    if location and not regions.is_known_region(location):
        close = regions.closest_regions(location)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        c.add(LOCATION_KEY, f"unknown Azure region {location!r}{hint}; use a name from `az account list-locations "
                            f"--query \"[].name\" -o tsv` (gpushare knows the public, US Government and China "
                            f"regions as of {regions.REGIONS_AS_OF}; a newer region goes into gpushare/regions.py)")
        return ""
    return location or ""


def parse_azure(c: Checker, raw: dict[str, Any]) -> AzureSettings:
    if is_secure_value(raw.get(SUBSCRIPTION_KEY)):
        # Under `pulumi up` the engine hands the program the decrypted value; only an offline read sees this.
        environment = parse_if_set(raw, ENVIRONMENT_KEY, lambda v: c.check(ENVIRONMENT, v, ENVIRONMENT_KEY),
                                   ENVIRONMENT.default)
        return AzureSettings(subscription_id=None, environment=environment, subscription_secret=True)
    subscription = parse_if_set(raw, SUBSCRIPTION_KEY, lambda v: c.check(SUBSCRIPTION, v, SUBSCRIPTION_KEY), None)
    environment = parse_if_set(raw, ENVIRONMENT_KEY, lambda v: c.check(ENVIRONMENT, v, ENVIRONMENT_KEY),
                               ENVIRONMENT.default)
    return AzureSettings(subscription_id=subscription, environment=environment)


def parse_guard_mode(c: Checker, value: Any) -> GuardMode | None:
    if isinstance(value, bool):
        # YAML 1.1 reads unquoted off/no/false as false and on/yes/true as true.
        c.add(GUARD_KEY, f"YAML reads an unquoted {'on, yes or true' if value else 'off, no or false'} as the "
                         f"boolean {str(value).lower()}, got {str(value).lower()}; the guard cannot be switched off: "
                         f"write `{GUARD_KEY}: strict` or `{GUARD_KEY}: warn` (quote a value that YAML would read "
                         f"as a boolean)")
        return None
    return c.check(GUARD, value, GUARD_KEY)


def check_region_cloud(c: Checker, location: str, environment: AzureEnvironment, explicit: bool) -> None:
    """A region exists in one cloud only: the provider, the guard and preflight all talk to the cloud that
    `azure-native:environment` names, where any other cloud's region is unknown."""
    if not location:
        return
    cloud = next((name for name, names in regions.SOVEREIGN_REGIONS.items() if location in names),
                 AzureEnvironment.PUBLIC.value)
    if cloud == environment.value:
        return
    setting = f"{ENVIRONMENT_KEY} is {environment.value}" if explicit else f"{ENVIRONMENT_KEY} is not set (public)"
    c.add(LOCATION_KEY, f"{location} is a region of the {cloud} cloud, but {setting}; set `{ENVIRONMENT_KEY}: "
                        f"{cloud}`, or use a region of the {environment.value} cloud")


def parse_preflight_mode(c: Checker, value: Any) -> PreflightMode | None:
    # YAML 1.1 (PyYAML, so `plan` and `preflight`) reads an unquoted `off` as false; the Pulumi CLI's YAML 1.2 keeps
    # the string. Both mean off; an unquoted on/yes/true names no mode.
    if value is False:
        return PreflightMode.OFF
    if value is True:
        c.add(PREFLIGHT_KEY, "YAML reads an unquoted on, yes or true as the boolean true, which names no mode; "
                             f"write `{PREFLIGHT_KEY}: strict` or `{PREFLIGHT_KEY}: warn`")
        return None
    return c.check(PREFLIGHT, value, PREFLIGHT_KEY)
