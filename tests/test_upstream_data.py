"""A missing upstream data file skips its test on a developer's clone and fails it under CI."""

import pytest

from tests.upstream_data import upstream_file


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception), ("", pytest.skip.Exception)],
                         ids=["ci-fails", "developer-skips"])
def test_a_missing_file_fails_under_ci_and_skips_elsewhere(monkeypatch, tmp_path, ci, outcome):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="absent.yaml is missing"):
        upstream_file("absent.yaml", "a test file", tmp_path)


def test_a_present_file_is_returned(tmp_path):
    (tmp_path / "here.yaml").write_text("a: 1\n")
    assert upstream_file("here.yaml", "a test file", tmp_path) == tmp_path / "here.yaml"
