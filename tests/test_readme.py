"""README, the user's manual, stays true to what the commands print and to its own headings."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TABLE_START, TABLE_END = "<!-- quick-start-table:start -->\n```\n", "```\n<!-- quick-start-table:end -->"
# A cross-reference in README: `see "Heading"`, `(README "Heading")`, `as in "Heading"`, `("Heading")`.
README_REFERENCE = re.compile(r'(?:[Ss]ee |in |README |\()"([A-Z][^"]*)"')
# Elsewhere (workflows, messages): `README "Heading"`.
OTHER_REFERENCE = re.compile(r'README "([^"]+)"')


def headings(text: str) -> set[str]:
    found, in_fence = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            found.add(line.lstrip("#").strip())
    return found


def test_quick_start_table_is_what_make_plan_prints():
    text = README.read_text()
    shown = text[text.index(TABLE_START) + len(TABLE_START):text.index(TABLE_END)]
    result = subprocess.run([sys.executable, "-m", "gpushare", "plan", "dev"], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("POOL "))
    end = lines.index("", start)
    assert shown == "\n".join(lines[start:end]) + "\n", "README's quick-start table is not what `plan dev` prints"


def test_readme_cross_references_name_existing_headings():
    text = README.read_text()
    known = headings(text)
    references = {(" ".join(m.group(1).split()), "README.md") for m in README_REFERENCE.finditer(text)}
    others = [*ROOT.glob(".github/workflows/*.yml"), *ROOT.glob("gpushare/**/*.py"), ROOT / "Makefile"]
    for path in others:
        references |= {(" ".join(m.group(1).split()), str(path.relative_to(ROOT))) for m in OTHER_REFERENCE.finditer(path.read_text())}
    assert len(references) > 5
    missing = sorted((name, where) for name, where in references if name not in known)
    assert not missing, f"cross-references to headings README does not have: {missing}"


def test_readme_deployed_file_example_is_read_by_the_guard(tmp_path):
    from gpushare.azure.deployed import read_file

    start, end = "<!-- deployed-file-example:start -->\n```json\n", "```\n<!-- deployed-file-example:end -->"
    text = README.read_text()
    example = tmp_path / "pools.json"
    example.write_text(text[text.index(start) + len(start):text.index(end)])
    pools = {pool.name: pool for pool in read_file(example)}
    assert pools["t4ts"].vm_size == "Standard_NC4as_T4_v3"
    assert pools["t4ts"].node_labels == {"gpushare.io/pool": "t4ts"}
    assert pools["t4ts"].os_sku == "Ubuntu" and pools["system"].mode == "System"


def test_readme_tenant_example_is_accepted_under_the_default_mig_strategy():
    """The onboarding example's quota names what its pool advertises under `migStrategy: single` (the default),
    so a user who copies it onto such a pool is not refused."""
    import yaml

    from gpushare.stackfile.config import parse_config

    text = README.read_text()
    section = text[text.index("To add a tenant, add to the stack file"):]
    block = section[section.index("```yaml\n") + len("```yaml\n"):section.index("```\n", section.index("```yaml\n") + 8)]
    tenants = yaml.safe_load(block)["gpushare:tenants"]
    raw = {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "gpushare-readme", "kubernetesVersion": "1.33"},
        # The pool the example names, as stacks/Pulumi.prod.yaml defines it, under the default strategy.
        "gpushare:pools": [{"name": "h100mig", "vmSize": "Standard_NC40ads_H100_v5", "mig": "MIG3g",
                            "sharing": {"strategy": "time-slicing", "replicas": 2}, "count": 2}],
        "gpushare:tenants": tenants,
    }
    stack = parse_config(raw, source="README.md", stack="readme")
    assert stack.operator.mig_strategy.value == "single"
    assert dict(stack.tenants[0].quota)
