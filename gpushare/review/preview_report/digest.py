"""`pulumi preview --json` read into steps: the digest's shape checked (every problem named, with the file), each
step's op, URN, old and new state, and what changed."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpushare.errors import GpushareError


class MalformedPreviewError(GpushareError):
    """The input is not what `pulumi preview --json` prints."""

    exit_code = 2


@dataclass(frozen=True)
class Step:
    op: str
    urn: str
    old: Mapping | None
    new: Mapping | None
    reasons: tuple[str, ...]

    @property
    def type(self) -> str:
        state = self.new or self.old or {}
        return str(state.get("type") or urn_type(self.urn))

    @property
    def name(self) -> str:
        return self.urn.split("::", 3)[-1]

    def inputs(self, side: str) -> Mapping | None:
        state = self.old if side == "old" else self.new
        if state is None:
            return None
        inputs = state.get("inputs")
        return inputs if isinstance(inputs, Mapping) else {}


@dataclass(frozen=True)
class Preview:
    steps: tuple[Step, ...]
    diagnostics: tuple[Mapping, ...]
    change_summary: Mapping[str, int] | None
    config: Mapping[str, object] = field(default_factory=dict)
    """The stack's config as the preview printed it (secrets as `[secret]`); may be missing."""


def urn_type(urn: str) -> str:
    """`urn:pulumi:stack::project::parent$type::name` -> `type`."""
    parts = urn.split("::")
    return parts[2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""


def urn_stack(urn: str) -> str | None:
    """`urn:pulumi:stack::project::...` -> `stack`."""
    if not urn.startswith("urn:pulumi:"):
        return None
    return urn.split("::", 1)[0].removeprefix("urn:pulumi:") or None


def parse_preview(text: str, source: str) -> Preview:
    """Raises MalformedPreviewError naming `source`, where and what, for anything that is not a preview digest."""
    if not text.strip():
        raise MalformedPreviewError(
            f"{source}: empty; `pulumi preview --json` printed nothing (its error is in the step's log)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedPreviewError(
            f"{source}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            f"expected the output of `pulumi preview --json`") from None
    except RecursionError:  # the decoder recurses per level; no preview is nested that deep
        raise MalformedPreviewError(
            f"{source}: nested too deeply to be a preview (over {sys.getrecursionlimit()} levels); "
            f"expected the output of `pulumi preview --json`") from None
    problems = _shape_problems(doc)
    if problems:
        error = MalformedPreviewError(
            f"{source}: not a `pulumi preview --json` document:\n" + "\n".join(f"  - {p}" for p in problems[:10]))
        error.hint = "pass the file `pulumi preview --json > FILE` wrote (stdout only; logs go to stderr)"
        raise error
    steps = tuple(
        Step(op=s["op"], urn=s["urn"], old=s.get("oldState"), new=s.get("newState"), reasons=_reasons(s))
        for s in doc.get("steps") or []
    )
    summary = doc.get("changeSummary")
    config = doc.get("config") if isinstance(doc.get("config"), Mapping) else {}
    return Preview(steps, tuple(doc.get("diagnostics") or ()), summary if isinstance(summary, Mapping) else None,
                   config)


def _shape_problems(doc: object) -> list[str]:
    if not isinstance(doc, dict):
        return [f"the top level must be an object, got {type(doc).__name__}"]
    if "steps" not in doc and "diagnostics" not in doc:
        return ["neither `steps` nor `diagnostics` is present"]
    problems = []
    for key in ("steps", "diagnostics"):
        if doc.get(key) is not None and not isinstance(doc[key], list):
            problems.append(f"`{key}` must be a list, got {type(doc[key]).__name__}")
    for index, step in enumerate(doc.get("steps") or [] if isinstance(doc.get("steps"), list) else []):
        if not isinstance(step, dict):
            problems.append(f"steps[{index}] must be an object")
            continue
        for key in ("op", "urn"):
            if not isinstance(step.get(key), str):
                problems.append(f"steps[{index}].{key} is missing or not a string")
        for key in ("oldState", "newState"):
            if step.get(key) is not None and not isinstance(step[key], dict):
                problems.append(f"steps[{index}].{key} must be an object")
    for index, diagnostic in enumerate(doc.get("diagnostics") or [] if isinstance(doc.get("diagnostics"), list) else []):
        if not isinstance(diagnostic, dict) or not isinstance(diagnostic.get("message", ""), str):
            problems.append(f"diagnostics[{index}] must be an object with a string `message`")
    if doc.get("changeSummary") is not None and not (
            isinstance(doc["changeSummary"], dict)
            and all(isinstance(v, int) and not isinstance(v, bool) for v in doc["changeSummary"].values())):
        problems.append("`changeSummary` must map operations to counts")
    return problems


def _reasons(step: Mapping) -> tuple[str, ...]:
    """What changed: `detailedDiff` paths with their kind, else `replaceReasons` on a replace, else `diffReasons`."""
    detailed = step.get("detailedDiff")
    if isinstance(detailed, Mapping) and detailed:
        return tuple(f"{path} ({d.get('kind', 'update')})" if isinstance(d, Mapping) else path
                     for path, d in detailed.items())
    replace = step.get("replaceReasons") or []
    return tuple(str(r) for r in (replace or step.get("diffReasons") or []))
