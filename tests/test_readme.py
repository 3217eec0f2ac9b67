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


def test_every_page_has_a_title_of_its_own():
    """Two pages titled alike ("Config reference" was the guide's and the generated list's) send a reader to the
    wrong one."""
    titles = {}
    for path in PAGES[1:]:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# "), f"{path.name}: first line must be its title"
        titles.setdefault(first[2:].split(":")[0].strip().lower(), []).append(path.name)
    assert not {title: names for title, names in titles.items() if len(names) > 1}


def test_the_cost_page_names_every_workflow_that_prices_its_comment():
    workflows = [p.name for p in (ROOT / ".github" / "workflows").glob("*.yml") if "--prices" in p.read_text()]
    assert workflows
    text = page("cost.md")
    assert all(name in text for name in workflows), workflows
    assert "do not pass `--prices`" not in text


def test_sharing_modes_names_a_time_sliced_mig_slice_as_the_plan_advertises_it(capsys):
    """Under `migStrategy: mixed` a time-sliced MIG slice is `nvidia.com/mig-<slice>.shared` (stacks/Pulumi.prod.yaml's
    h100mig), not `nvidia.com/gpu.shared` as the page once said."""
    import json

    from gpushare.cli import main

    assert main(["plan", str(ROOT / "stacks" / "Pulumi.prod.yaml"), "--json"]) == 0
    pool = next(p for p in json.loads(capsys.readouterr().out)["pools"] if p["name"] == "h100mig")
    time_slicing = next(line for line in page("sharing-modes.md").splitlines() if line.startswith("| time-slicing"))
    assert pool["resource"] == "nvidia.com/mig-3g.47gb.shared" and f"`{pool['resource']}`" in time_slicing


def test_the_operator_page_cites_the_cdi_source_the_code_cites():
    """AKS's bootstrap turns CDI on in containerd: the page says so with the source the chart values cite."""
    code = (ROOT / "gpushare" / "sharing" / "operator_values.py").read_text()
    cited = re.search(r"Azure/AgentBaker#\d+", code)[0]
    assert cited in page("operator.md") and "no AKS source shows" not in page("operator.md")
