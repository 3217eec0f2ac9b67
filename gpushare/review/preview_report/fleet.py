"""`report`'s fleet section, for a stack that is a fleet member (`gpushare:fleet`): where the stack stands in the
fleet's update order, then the fleet-wide delta of the change, which `fleet compare` computes
(`review.fleet_compare.fleet_delta_lines`: capacity and cost per region before -> after, the members the change
touches with their update stage). Both sides are `fleet plan --json` documents: the head's planned by `report`
from the checkout, the base's passed with `--fleet-base`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpushare.review.fleet_compare import fleet_delta_lines, fleet_name
from gpushare.review.markdown import code


def _member(document: Mapping[str, Any] | None, stack: str) -> Mapping[str, Any] | None:
    return next((m for m in (document or {}).get("members", []) if m.get("stack") == stack), None)


def stage_line(stack: str, member: Mapping[str, Any], document: Mapping[str, Any]) -> str:
    """Which update stage the stack's cluster is in, and what runs before and after it."""
    stages = document["updates"]["stages"]
    names = [s["name"] for s in stages]
    index = names.index(member["stage"]) if member["stage"] in names else None
    where = f"update group {code(member['group'])}, stage {code(member['stage'])}"
    if index is None:
        return f"Stack {code(stack)} is fleet member {code(member['member'])}: {where}."
    position = f"{index + 1} of {len(stages)}"
    if member["canary"]:
        wait = stages[index]["afterStageWaitSeconds"]
        after = f"the rest of the fleet waits {wait} s after it" if wait else "the rest of the fleet follows"
        order = f"{position}: a canary, updated first; {after}"
    elif index:
        before = stages[index - 1]
        wait = f" and its {before['afterStageWaitSeconds']} s wait" if before["afterStageWaitSeconds"] else ""
        order = f"{position}: after stage {code(before['name'])}{wait}"
    else:
        order = position
    return f"Stack {code(stack)} is fleet member {code(member['member'])}: {where} ({order})."


def fleet_section(stack: str, head: Mapping[str, Any] | None, base: Mapping[str, Any] | None,
                  problem: str | None = None) -> list[str]:
    """The section's lines; none when the stack is a member on neither side. `head`: the head's fleet plan (None:
    the stack names no fleet, or it could not be planned: `problem` says why); `base`: the base's (None: not
    given; an empty document: no fleet at the base)."""
    now, before = _member(head, stack), _member(base, stack)
    if now is None and before is None and problem is None:
        return []
    document = head if head is not None else base
    name = fleet_name(base or {}, head or {}) if document is not None else "(not planned)"
    lines = [f"#### Fleet {code(name)}", ""]
    if problem:
        lines += [f"_Fleet: not shown: {problem}_", ""]
        return lines
    if now is not None:
        lines.append(stage_line(stack, now, head))
        if base is not None and before is None:
            lines[-1] += " It joins the fleet with this change."
    else:  # its stack file names no fleet now: which fleet the others form is not known from this stack
        return [*lines, f"Stack {code(stack)} leaves the fleet with this change (it was in stage "
                        f"{code(before['stage'])}); `gpushare fleet compare` shows what that does to the fleet.", ""]
    lines.append("")
    if base is None:
        lines += ["_Fleet-wide delta: not shown: no base fleet plan given (`report --fleet-base FILE`, from "
                  "`gpushare fleet plan FLEET_FILE --json` on the base commit)._", ""]
        return lines
    return [*lines, *fleet_delta_lines(base, head), ""]
