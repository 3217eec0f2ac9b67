"""README and the `docs/` pages, the user's manual, stay true to what the commands print, to their own headings and
to the files they link."""

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
TABLE_START, TABLE_END = "<!-- quick-start-table:start -->\n```\n", "```\n<!-- quick-start-table:end -->"
# A cross-reference on a page to a heading on the same page: `see "Heading"`, `as in "Heading"`, `("Heading")`
# (one to another page is a link).
PAGE_REFERENCE = re.compile(r'(?:[Ss]ee |in |README |\()"([A-Z][^"]*)"')
# Elsewhere (workflows, messages, docstrings): `docs/<page>.md "Heading"`.
OTHER_REFERENCE = re.compile(r'(docs/[a-z-]+\.md) "([^"]+)"')
# A Markdown link (its text may wrap): the target, up to a title or the closing parenthesis.
LINK = re.compile(r'\]\(([^)\s]+)[^)]*\)')


def page(name: str) -> str:
    """The text of `docs/<name>`, where a README section now lives."""
    return (DOCS / name).read_text()


def headings(text: str) -> set[str]:
    found, in_fence = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            found.add(line.lstrip("#").strip())
    return found


def links(text: str) -> list[str]:
    """The targets of a page's Markdown links, outside code (a pattern in backticks is not a link)."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return LINK.findall(re.sub(r"`[^`]*`", "", prose))


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_quick_start_table_is_what_make_plan_prints():
    text = README.read_text()
    shown = text[text.index(TABLE_START) + len(TABLE_START):text.index(TABLE_END)]
    result = subprocess.run([sys.executable, "-m", "gpushare", "plan", "dev"], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("POOL "))
    end = lines.index("", start)
    assert shown == "\n".join(lines[start:end]) + "\n", "README's quick-start table is not what `plan dev` prints"


def test_readme_fits_on_a_screen_and_links_every_docs_page():
    text = README.read_text()
    assert len(text.splitlines()) < 200
    linked = set(links(text))
    unlinked = [p.name for p in PAGES[1:] if f"docs/{p.name}" not in linked]
    assert not unlinked, f"docs pages README does not link: {unlinked}"


def test_cross_references_name_existing_headings():
    references = set()
    for path in PAGES:
        text = path.read_text()
        known = headings(text)
        references |= {(name, str(path.relative_to(ROOT))) for name in
                       (" ".join(m.group(1).split()) for m in PAGE_REFERENCE.finditer(text)) if name not in known}
    others = [*ROOT.glob(".github/workflows/*.yml"), *ROOT.glob("gpushare/**/*.py"), *ROOT.glob("components/*.py"),
              *ROOT.glob("tests/**/*.py"), ROOT / "Makefile"]
    cited = 0
    for path in others:
        for m in OTHER_REFERENCE.finditer(path.read_text()):
            cited += 1
            target = ROOT / m.group(1)
            if not target.exists() or " ".join(m.group(2).split()) not in headings(target.read_text()):
                references.add((f"{m.group(1)} \"{m.group(2)}\"", str(path.relative_to(ROOT))))
    assert cited > 3
    assert not sorted(references), f"cross-references to headings that do not exist: {sorted(references)}"


def test_every_relative_link_resolves():
    """A link from README or a docs page to a file (and a heading in it) that is there."""
    broken = []
    for path in PAGES:
        for target in links(path.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, fragment = target.partition("#")
            linked = (path.parent / unquote(file)).resolve() if file else path
            if not linked.exists():
                broken.append((path.name, target))
            elif fragment and linked.suffix == ".md" and fragment not in {anchor(h) for h in headings(linked.read_text())}:
                broken.append((path.name, target))
    assert not broken, f"links to files or headings that do not exist: {broken}"


def test_config_reference_is_generated_from_the_declarations():
    from gpushare.stackfile.reference import reference_markdown

    assert page("config-reference.md") == reference_markdown(), (
        "docs/config-reference.md is stale: run `python -m gpushare schema --markdown > docs/config-reference.md`")


def test_deployed_file_example_is_read_by_the_guard(tmp_path):
    from gpushare.azure.deployed import read_file

    start, end = "<!-- deployed-file-example:start -->\n```json\n", "```\n<!-- deployed-file-example:end -->"
    text = page("guard.md")
    example = tmp_path / "pools.json"
    example.write_text(text[text.index(start) + len(start):text.index(end)])
    pools = {pool.name: pool for pool in read_file(example)}
    assert pools["t4ts"].vm_size == "Standard_NC4as_T4_v3"
    assert pools["t4ts"].node_labels == {"gpushare.io/pool": "t4ts"}
    assert pools["t4ts"].os_sku == "Ubuntu" and pools["system"].mode == "System"


def test_tenant_example_is_accepted_under_the_default_mig_strategy():
    """The onboarding example's quota names what its pool advertises under `migStrategy: single` (the default),
    so a user who copies it onto such a pool is not refused."""
    import yaml

    from gpushare.stackfile.config import parse_config

    text = page("tenants.md")
    section = text[text.index("To add a tenant, add to the stack file"):]
    block = section[section.index("```yaml\n") + len("```yaml\n"):section.index("```\n", section.index("```yaml\n") + 8)]
    tenants = yaml.safe_load(block)["gpushare:tenants"]
    raw = {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "gpushare-readme", "kubernetesVersion": "1.36"},
        # The pool the example names, as stacks/Pulumi.prod.yaml defines it, under the default strategy.
        "gpushare:pools": [{"name": "h100mig", "vmSize": "Standard_NC40ads_H100_v5", "mig": "MIG3g",
                            "sharing": {"strategy": "time-slicing", "replicas": 2}, "count": 2}],
        "gpushare:tenants": tenants,
    }
    stack = parse_config(raw, source="docs/tenants.md", stack="readme")
    assert stack.operator.mig_strategy.value == "single"
    assert dict(stack.tenants[0].quota)
