"""The example PR comment in docs/ci.md is what `report` prints for the fixture it names."""

import json
from pathlib import Path

from gpushare.review.preview_report.digest import parse_preview
from gpushare.review.preview_report.pr_comment import render_report
from tests.review.preview_builders import readme_example

CI_PAGE = Path(__file__).resolve().parents[2] / "docs" / "ci.md"
START, END = "<!-- example-pr-comment:start -->\n", "<!-- example-pr-comment:end -->"


def test_readme_example_comment_is_current():
    text = CI_PAGE.read_text()
    shown = text[text.index(START) + len(START):text.index(END)]
    expected = render_report(parse_preview(json.dumps(readme_example()), "readme_example"), None)
    assert shown == expected, "docs/ci.md's example comment is stale: replace the block between the markers with render_report(readme_example())"
