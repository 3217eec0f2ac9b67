"""The stack file's key reference (`docs/config-reference.md`): one row per declared key, saying what the
declaration says, printed by `gpushare schema --markdown` (the committed page is checked in tests/test_readme.py)."""

from __future__ import annotations

import pytest

from gpushare.cli import main
from gpushare.stackfile.config import CONFIG
from gpushare.stackfile.declarations import ARRAY, INTEGER, OBJECT, STRING, Field, Section
from gpushare.stackfile.reference import reference_markdown


def key_paths(section: Section, prefix: str = "") -> list[str]:
    paths = []
    for field in section.fields:
        paths.append(f"{prefix}{field.name}")
        if field.section is not None:
            paths += key_paths(field.section, f"{prefix}{field.name}.")
        if field.items is not None and field.items.section is not None:
            paths += key_paths(field.items.section, f"{prefix}{field.name}[].")
    return paths


def rows(markdown: str) -> dict[str, list[str]]:
    found = {}
    for line in markdown.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            found[cells[0].strip("`")] = cells[1:]
    return found


def test_every_declared_key_has_a_row_in_declaration_order():
    printed = list(rows(reference_markdown()))
    declared = key_paths(CONFIG)
    assert [path for path in printed if path in declared] == declared
    assert "gpushare:pools[].sharing.replicas" in printed and "gpushare:tenants[].queue.priority" in printed


def test_a_key_added_to_a_declaration_is_in_the_reference_with_its_rule():
    pools = Field("pools", ARRAY, "GPU pools.", required=True, min_items=1, unique=True,
                  items=Field("pool", OBJECT, "A pool.", section=Section((
                      Field("name", STRING, "The pool's name.", required=True),
                      Field("burst", INTEGER, "Extra nodes for a burst.", default=2, minimum=0, maximum=8),
                      Field("mode", STRING, "How it bursts.", default="eager", enum=("eager", "lazy")),
                  ))))
    shown = rows(reference_markdown(Section((pools,), closed=False)))
    assert shown["pools"] == ["list of object", "Required. GPU pools.", "at least 1 item; no item twice"]
    assert shown["pools[].burst"] == ["integer", "Optional. Default: 2. Extra nodes for a burst.", "0 <= value <= 8"]
    assert shown["pools[].mode"] == ["string", "Optional. Default: eager. How it bursts.", "`eager`, `lazy`"]


def test_schema_markdown_prints_the_reference(capsys):
    assert main(["schema", "--markdown"]) == 0
    assert capsys.readouterr().out == reference_markdown()


def test_schema_takes_one_of_prices_and_markdown(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["schema", "--prices", "--markdown"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
