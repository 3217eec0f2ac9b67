"""`python -m gpushare report`: Markdown on stdout, a clear error and exit 2 on bad input, no traceback ever."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.cli import main
from tests.review import preview_builders as b

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_report_reads_a_file(tmp_path, capsys):
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(b.pool_delete()))
    assert main(["report", str(path), "--stack", "prod-westeurope"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("### gpushare preview of stack `prod-westeurope`\n")
    assert captured.err == ""


def test_report_reads_stdin_and_honours_max_chars():
    result = subprocess.run([sys.executable, "-m", "gpushare", "report", "-", "--max-chars", "5000"],
                            input=json.dumps(b.large(500)), cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) <= 5000
    assert "| **h100mig** | **replace** |" in result.stdout


@pytest.mark.parametrize(
    ("content", "fragment"),
    [("{not json", "not JSON (line 1, column 2"), ('{"steps": [1]}', "steps[0] must be an object")],
    ids=["not-json", "bad-step"],
)
def test_malformed_preview_exits_2_with_the_file_named(tmp_path, capsys, content, fragment):
    path = tmp_path / "preview.json"
    path.write_text(content)
    assert main(["report", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: {path}: ")
    assert fragment in captured.err


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.json")]) == 2
    assert "nope.json: no such file" in capsys.readouterr().err


def test_max_chars_below_the_floor_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["report", "x.json", "--max-chars", "100"])
    assert caught.value.code == 2
    assert "must be between 2,000 and 65,536, got 100" in capsys.readouterr().err


def test_a_reader_closing_the_pipe_early_is_no_failure(tmp_path):
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(b.large(3_000)))
    result = subprocess.run(f"{sys.executable} -m gpushare report {path} | head -1", shell=True, cwd=REPO_ROOT,
                            capture_output=True, text=True)
    assert result.stdout == "### gpushare preview of stack `prod`\n"
    assert "Traceback" not in result.stderr and result.stderr == ""
