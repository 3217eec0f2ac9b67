"""From a preview's steps to the GPU model `review.gpu_changes` renders: each GPU pool's transition (its agent-pool
steps, with the device-plugin config and the operator's MIG strategy on each side) and the GPU Operator's."""

from __future__ import annotations

from collections.abc import Mapping

from gpushare.review.gpu_changes import (
    AGENT_POOL_TYPE,
    CONFIG_MAP_TYPE,
    RELEASE_TYPE,
    OperatorTransition,
    PoolSide,
    PoolTransition,
    is_gpu_pool,
)
from gpushare.review.preview_report.digest import Preview, Step
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, is_operator_chart

_POOL_OPS = {
    "create-replacement": "replace", "delete-replaced": "replace", "import-replacement": "replace",
    "read-replacement": "replace", "read": "same", "refresh": "same",
}
_POOL_OP_RANK = ("replace", "delete", "create", "update", "import", "discard", "same")


def _find(preview: Preview, type_: str, match) -> Step | None:
    for step in preview.steps:
        if step.type == type_ and any(match(step.inputs(side) or {}) for side in ("old", "new")):
            return step
    return None


def _config_data(step: Step | None, side: str) -> Mapping | None:
    if step is None:
        return None
    data = (step.inputs(side) or {}).get("data") if step.inputs(side) is not None else None
    return data if isinstance(data, Mapping) else None


def _mig_strategy(release: Step | None, side: str) -> str | None:
    values = (release.inputs(side) or {}).get("values") if release and release.inputs(side) is not None else None
    mig = values.get("mig") if isinstance(values, Mapping) else None
    strategy = mig.get("strategy") if isinstance(mig, Mapping) else None
    return strategy if isinstance(strategy, str) else None


def pool_transitions(preview: Preview) -> list[PoolTransition]:
    config_map = _find(preview, CONFIG_MAP_TYPE, lambda i: (i.get("metadata") or {}).get("name") == CONFIG_MAP_NAME)
    release = _find(preview, RELEASE_TYPE, lambda i: is_operator_chart(i.get("chart")))
    by_pool: dict[str, list[Step]] = {}
    for step in preview.steps:
        if step.type != AGENT_POOL_TYPE:
            continue
        inputs = step.inputs("new") or step.inputs("old") or {}
        if not is_gpu_pool(inputs) and not is_gpu_pool(step.inputs("old") or {}):
            continue
        name = str(inputs.get("agentPoolName") or step.name)
        by_pool.setdefault(name, []).append(step)
    transitions = []
    for name, steps in by_pool.items():
        ops = [_POOL_OPS.get(s.op, s.op) for s in steps]
        op = min(ops, key=lambda o: _POOL_OP_RANK.index(o) if o in _POOL_OP_RANK else len(_POOL_OP_RANK))
        old_step = next((s for s in steps if s.old is not None), None)
        new_step = next((s for s in steps if s.new is not None), None)
        transitions.append(PoolTransition(
            name=name, op=op,
            before=_side(name, old_step, "old", config_map, release) if op != "create" else None,
            after=_side(name, new_step, "new", config_map, release) if op != "delete" else None,
            # Pulumi refuses to delete or replace what is protected in state and still protected by the program.
            protected=bool(old_step and old_step.old.get("protect")) and (
                new_step is None or bool(new_step.new.get("protect"))),
        ))
    return transitions


def _side(name: str, step: Step | None, side: str, config_map: Step | None, release: Step | None) -> PoolSide | None:
    if step is None:
        return None
    inputs = step.inputs(side) or {}
    data = _config_data(config_map, side)
    pool = PoolSide(name, inputs, None, _mig_strategy(release, side))
    config = data.get(pool.config_key) if data is not None else None
    return PoolSide(name, inputs, config if isinstance(config, str) else None, pool.mig_strategy)


def operator_transition(preview: Preview) -> OperatorTransition | None:
    config_map = _find(preview, CONFIG_MAP_TYPE, lambda i: (i.get("metadata") or {}).get("name") == CONFIG_MAP_NAME)
    release = _find(preview, RELEASE_TYPE, lambda i: is_operator_chart(i.get("chart")))
    if release is None and config_map is None:
        return None
    old_data, new_data = _config_data(config_map, "old"), _config_data(config_map, "new")
    return OperatorTransition(
        op=release.op if release else "same",
        before=release.inputs("old") if release else None,
        after=release.inputs("new") if release else None,
        config_keys_before=tuple(old_data or ()),
        config_keys_after=tuple(new_data or ()),
        config_changed=old_data is not None and new_data is not None and old_data != new_data,
    )
