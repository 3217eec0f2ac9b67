"""`.github/scripts/pr_comment.js` (run by actions/github-script): one comment per stack, edited in place, found
among any number of comments, never a human's comment that happens to carry the marker."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HARNESS = r"""
const script = require(process.argv[2]);
const state = JSON.parse(process.argv[3]);
const calls = [];
const github = {
  rest: { issues: {
    listComments: 'listComments',
    createComment: async (args) => { calls.push(['create', args.issue_number, args.body]); },
    updateComment: async (args) => { calls.push(['update', args.comment_id, args.body]); },
  } },
  // Like octokit's paginate: every page, here served from the fixture.
  paginate: async (method, args) => { calls.push(['list', args.per_page]); return state.comments; },
};
const context = { repo: { owner: 'o', repo: 'r' }, payload: { pull_request: { number: 7 } } };
script({ github, context }).then(() => console.log(JSON.stringify(calls)));
"""


def run(tmp_path: Path, comments: list[dict], stack: str = "prod", body: str = "report\n") -> list:
    node = shutil.which("node")
    assert node, "node is needed to test the workflow's comment script (the machine image ships nodejs)"
    harness = tmp_path / "harness.js"
    harness.write_text(HARNESS)
    body_file = tmp_path / "body.md"
    body_file.write_text(body)
    result = subprocess.run(
        [node, str(harness), str(ROOT / ".github/scripts/pr_comment.js"), json.dumps({"comments": comments})],
        capture_output=True, text=True, env={"STACK": stack, "BODY_FILE": str(body_file), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_first_push_creates_the_comment(tmp_path):
    calls = run(tmp_path, [{"id": 1, "user": {"type": "User"}, "body": "LGTM"}])
    assert calls == [["list", 100], ["create", 7, "<!-- gpushare-preview:prod -->\nreport\n"]]


def test_later_pushes_edit_the_bot_comment_of_the_same_stack(tmp_path):
    comments = [{"id": i, "user": {"type": "User"}, "body": f"comment {i}"} for i in range(40)]
    comments += [
        {"id": 50, "user": {"type": "User"}, "body": "<!-- gpushare-preview:prod -->\nquoted by a human"},
        {"id": 51, "user": {"type": "Bot"}, "body": "<!-- gpushare-preview:dev -->\nold dev"},
        {"id": 52, "user": {"type": "Bot"}, "body": "<!-- gpushare-preview:prod -->\nold prod"},
    ]
    calls = run(tmp_path, comments, body="new report\n")
    assert calls == [["list", 100], ["update", 52, "<!-- gpushare-preview:prod -->\nnew report\n"]]
