"""The stack file's top-level config keys: gpushare's own and the azure-native settings gpushare reads."""

from __future__ import annotations

NS = "gpushare"
LOCATION_KEY = "azure-native:location"
CLUSTER_KEY = f"{NS}:cluster"
OPERATOR_KEY = f"{NS}:operator"
POOLS_KEY = f"{NS}:pools"
GUARD_KEY = f"{NS}:guard"
TENANTS_KEY = f"{NS}:tenants"
PREFLIGHT_KEY = f"{NS}:preflight"
PLATFORM_KEY = f"{NS}:platform"
QUEUES_KEY = f"{NS}:queues"
METRICS_KEY = f"{NS}:metrics"
FLEET_KEY = f"{NS}:fleet"
PROJECT_KEYS = (CLUSTER_KEY, OPERATOR_KEY, POOLS_KEY, GUARD_KEY, PREFLIGHT_KEY, TENANTS_KEY, PLATFORM_KEY,
                QUEUES_KEY, METRICS_KEY, FLEET_KEY)
# azure-native's own settings that gpushare's Azure reads (guard, preflight) follow too.
SUBSCRIPTION_KEY = "azure-native:subscriptionId"
ENVIRONMENT_KEY = "azure-native:environment"
