"""Which field changes of the GPU table and the GPU Operator section only follow from a tenant change.

A pool gains or loses its `gpushare.io/tenant=<name>:NoSchedule` taint when it becomes or stops being dedicated to
one tenant (`model.pool_node_taints`), and the GPU Operator's DaemonSets tolerate every pool taint
(`operator_values.stack_pool_taints`). Listing those changes field by field buries the tenant change that caused
them; `compare` and `report` count them in one line of the tenants' section instead. Likewise an autoscaled pool's
label and taint tags repeat its `nodeLabels` and `nodeTaints` changes, so they are left out of the list.
"""

from __future__ import annotations

from gpushare.model.stack import AUTOSCALER_LABEL_TAG_PREFIX, AUTOSCALER_TAINT_TAG_PREFIX, TENANT_LABEL


def is_tenant_taint_change(path: str, old: object, new: object) -> bool:
    """An AgentPool input change: a tenant taint added, removed or renamed in `nodeTaints`."""
    return path.startswith("nodeTaints") and any(
        isinstance(value, str) and value.startswith(f"{TENANT_LABEL}=") for value in (old, new))


def is_toleration_change(path: str) -> bool:
    """A GPU Operator chart value change under a `tolerations` list (they follow the pools' taints)."""
    return ".tolerations[" in path or path.startswith("tolerations[")


def is_template_tag_change(path: str) -> bool:
    """An AgentPool `tags` change that only mirrors a `nodeLabels` or `nodeTaints` change: the autoscaler's
    scale-from-zero label and taint tags (`gpushare.sharing.autoscaling.template_tags`), listed by those fields."""
    return path.startswith((f'tags["{AUTOSCALER_LABEL_TAG_PREFIX}', f'tags["{AUTOSCALER_TAINT_TAG_PREFIX}'))
