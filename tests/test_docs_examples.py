"""Every YAML example in README and `docs/` that is a stack file or part of one is planned, as a user who copies it
would plan it: a whole stack as it is, a fragment inside a stack (the minimal one, or the stack an HTML comment
before the block names). A block that shows an error says so, and must be refused with that error.

Markers, on the line just before a block's opening fence:
- `<!-- stack-example: base stacks/Pulumi.NAME.yaml -->`: the fragment belongs in that stack (pools it names);
- `<!-- stack-example: refused, as the next block shows -->`: `plan` must exit 2 with the error the page shows in
  the next fenced block (`error: FILE: N configuration errors` and its `  - ` lines; a line may end in `...`);
- `<!-- not-a-stack: WHY -->`: YAML that is no part of a stack file (a pod spec's lines). Kubernetes objects
  (`apiVersion` and `kind`) and GitHub workflows (`jobs`; tests/workflows checks docs/ci.md's) are recognised
  without a marker.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.stack_files import MINIMAL_STACK_YAML, plan

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\S*)\s*$")
MARKER = re.compile(r"^\s*<!-- (?P<kind>stack-example|not-a-stack): ?(?P<text>.*?) -->\s*$")
REFUSED = re.compile(r"^refused, as the next block shows$")
BASE = re.compile(r"^base (?P<path>stacks/Pulumi\.[\w.-]+\.yaml)$")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    text: str
    marker: tuple[str, str] | None
    next_block: str = ""

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def yaml_blocks(path: Path) -> list[Example]:
    """The page's ```yaml blocks, dedented, with the marker on the line before each."""
    lines, found, i = path.read_text().splitlines(), [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        if opening["lang"] in ("yaml", "yml"):
            marker = MARKER.match(lines[i - 1]) if i else None
            following = next((j for j in range(end + 1, len(lines)) if FENCE.match(lines[j])), None)
            next_block = "" if following is None else "\n".join(
                lines[following + 1:next(j for j in range(following + 1, len(lines)) if lines[j].strip() == "```")])
            text = textwrap.dedent("\n".join(lines[i + 1:end])) + "\n"
            found.append(Example(str(path.relative_to(ROOT)), i + 1, text,
                                 (marker["kind"], marker["text"]) if marker else None, next_block))
        i = end + 1
    return found


EXAMPLES = [example for page in PAGES for example in yaml_blocks(page)]


def is_other_document(document: Any) -> bool:
    """A Kubernetes object or a GitHub workflow: YAML of another kind than a stack file."""
    return isinstance(document, dict) and ({"apiVersion", "kind"} <= set(document) or "jobs" in document)


def stack_text(example: Example) -> str:
    """The stack file a user ends up with: the example itself, or the base stack with the fragment in it."""
    document = yaml.safe_load(example.text)
    base_path = ROOT / BASE.match(example.marker[1])["path"] if example.marker and BASE.match(example.marker[1]) \
        else None
    base_text = base_path.read_text() if base_path else MINIMAL_STACK_YAML
    if isinstance(document, dict) and "config" in document:
        return example.text
    if document is None:  # comments only: a stack file's header line
        return example.text + base_text
    base = yaml.safe_load(base_text)
    if isinstance(document, dict) and all(":" in str(key) for key in document):
        base["config"].update(document)
    elif isinstance(document, list) and all(isinstance(item, dict) and "vmSize" in item for item in document):
        names = {item["name"] for item in document}
        base["config"]["gpushare:pools"] = [p for p in base["config"]["gpushare:pools"] if p["name"] not in names]
        base["config"]["gpushare:pools"] += document
    else:
        pytest.fail(f"{example}: a YAML block that is neither a stack, a config key, a pool list nor a Kubernetes "
                    "object; mark it (see this test's docstring)")
    return yaml.safe_dump(base, sort_keys=False)


STACK_EXAMPLES = [e for e in EXAMPLES if not (e.marker and e.marker[0] == "not-a-stack")
                  and not is_other_document(yaml.safe_load(e.text))]


@pytest.mark.parametrize("example", STACK_EXAMPLES, ids=str)
def test_every_stack_example_in_the_docs_plans_as_shown(example, tmp_path, capsys):
    path = tmp_path / f"Pulumi.{Path(example.page).stem}-{example.line}.yaml"
    path.write_text(stack_text(example))
    code, out, err = plan(capsys, path)
    if example.marker and REFUSED.match(example.marker[1]):
        assert code == 2, f"{example} should be refused: {out[:300]}"
        assert shown_error_is(example.next_block, err), \
            f"{example}: the page shows\n{example.next_block}\nplan says\n{err}"
    else:
        assert code == 0, f"{example} is refused by plan:\n{err}"


def shown_error_is(shown: str, said: str) -> bool:
    """Whether `plan`'s stderr is the error a page shows: the same count, and each problem line, whole or up to the
    `...` that cuts it (the file's path differs: the test's copy)."""
    first, *problems = shown.splitlines()
    count = re.fullmatch(r"error: \S+: (\d+ configuration errors?)", first)
    said_lines = said.splitlines()
    if not count or not said_lines or not said_lines[0].endswith(count[1]) or len(said_lines) != len(problems) + 1:
        return False
    return all(line.endswith(" ...") and got.startswith(line[:-3]) or got == line
               for line, got in zip(problems, said_lines[1:]))


def test_the_docs_have_stack_examples_of_every_kind():
    """The classification above sees what the pages hold: whole stacks, config keys, pools, a header line."""
    documents = [yaml.safe_load(e.text) for e in STACK_EXAMPLES]
    assert any(isinstance(d, dict) and "config" in d for d in documents)
    assert any(isinstance(d, dict) and "gpushare:tenants" in d for d in documents)
    assert any(isinstance(d, list) for d in documents)
    assert any(d is None for d in documents)
    assert len(STACK_EXAMPLES) >= 9


def test_markers_are_well_formed():
    for example in EXAMPLES:
        if example.marker and example.marker[0] == "stack-example":
            assert REFUSED.match(example.marker[1]) or BASE.match(example.marker[1]), example
        if example.marker and BASE.match(example.marker[1]):
            assert (ROOT / BASE.match(example.marker[1])["path"]).exists(), example


def test_a_shown_error_must_be_the_one_plan_gives():
    said = "error: /tmp/x.yaml: 2 configuration errors\n  - a: bad, got 1\n  - b: worse: x, y\n"
    assert shown_error_is("error: stacks/x.yaml: 2 configuration errors\n  - a: bad, got 1\n  - b: worse: ...", said)
    assert not shown_error_is("error: stacks/x.yaml: 2 configuration errors\n  - a: bad, got 2\n  - b: worse: ...",
                              said)
    assert not shown_error_is("error: stacks/x.yaml: 1 configuration error\n  - a: bad, got 1", said)


def test_a_wrong_example_fails_the_check(tmp_path, capsys):
    """The check can fail: a quota on a resource no pool advertises, as docs/queues.md had it, is refused."""
    example = Example("docs/x.md", 1,
                      "gpushare:tenants:\n  - {name: a, pools: [t4], quota: {nvidia.com/gpu.shared: 2}}\n", None)
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(stack_text(example))
    code, _, err = plan(capsys, path)
    assert code == 2 and "nvidia.com/gpu.shared" in err
