"""`gpushare:platform`: the add-ons' namespaces, validated with every problem named at its key path."""

from __future__ import annotations

import copy
import json
from typing import Any


from gpushare.model.stack import PlatformNamespace
from gpushare.review.plan_compare import parse_plan, tenant_compare_lines
from gpushare.stackfile.config import parse_config
from tests.stack_files import plan, write_stack
from tests.stackfile.test_config_tenants import BASE, problems

PLATFORM = "gpushare:platform"


def with_platform(value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    raw[PLATFORM] = value
    return raw


def test_namespaces_parse_with_every_pool_by_default():
    stack = parse_config(with_platform({"namespaces": [{"name": "calico-system"},
                                                       {"name": "monitoring", "pools": ["t4ts"]}]}),
                         source="s", stack="test")
    assert stack.platform == (PlatformNamespace("calico-system"), PlatformNamespace("monitoring", ("t4ts",)))


def test_every_problem_is_reported_at_once_with_its_fix():
    found = problems(with_platform({"namespaces": [
        {"name": "vision"}, {"name": "kube-system"}, {"name": "Bad_Name"},
        {"name": "mon", "pools": ["t4tz", "t4ts", "t4ts"]}, {"name": "mon"}, {"pools": []}, {"name": "x", "pool": []},
    ]}))
    assert found == {
        "gpushare:platform.namespaces[0].name": "'vision' is a tenant's namespace, bound to that tenant's pools; a "
                                                "platform namespace must be another one (move the add-on to its own "
                                                "namespace)",
        "gpushare:platform.namespaces[1].name": "'kube-system' is never judged by the tenant policies (exempt: "
                                                "kube-system, gpu-operator); remove the entry",
        "gpushare:platform.namespaces[2].name": "must be a Kubernetes namespace name (DNS-1123 label: 1-63 lowercase "
                                                "letters, digits or '-', starting and ending with a letter or digit), "
                                                "got 'Bad_Name'",
        "gpushare:platform.namespaces[3].pools[0]": "unknown pool 't4tz' (did you mean 't4ts'?); pools in "
                                                    "gpushare:pools: h100mig, t4ts",
        "gpushare:platform.namespaces[3].pools[2]": "pool 't4ts' is listed twice",
        "gpushare:platform.namespaces[4].name": "namespace 'mon' is already listed by gpushare:platform.namespaces[3]",
        "gpushare:platform.namespaces[5].name": "required: the add-on's namespace, e.g. calico-system",
        "gpushare:platform.namespaces[5].pools": "expected a list of at least one pool name, got a list []; leave the "
                                                 "key out for every pool; pools: h100mig, t4ts",
        "gpushare:platform.namespaces[6].pool": found["gpushare:platform.namespaces[6].pool"],
    }
    assert "unknown key" in found["gpushare:platform.namespaces[6].pool"]


def test_a_list_where_the_mapping_goes_is_refused():
    assert set(problems(with_platform([{"name": "calico-system"}]))) == {PLATFORM}


def _plan(raw: dict[str, Any], tmp_path, capsys) -> str:
    code, out, err = plan(capsys, write_stack(tmp_path, raw, f"Pulumi.{len(list(tmp_path.iterdir()))}.yaml"),
                          "--json")
    assert code == 0, err
    return out


def test_the_plan_lists_them_and_compare_shows_each_change(tmp_path, capsys):
    base = with_platform({"namespaces": [{"name": "calico-system"}, {"name": "monitoring", "pools": ["t4ts"]}]})
    head = with_platform({"namespaces": [{"name": "monitoring"}, {"name": "logging", "pools": ["h100mig"]}]})
    before, after = parse_plan(_plan(base, tmp_path, capsys), "base.json"), parse_plan(_plan(head, tmp_path, capsys), "head.json")
    assert json.loads(_plan(base, tmp_path, capsys))["platformNamespaces"] == [
        {"name": "calico-system", "pools": None}, {"name": "monitoring", "pools": ["t4ts"]}]
    assert before.platform == {"calico-system": None, "monitoring": ("t4ts",)}
    lines = tenant_compare_lines(before, after)
    section = lines[lines.index("#### Platform namespaces (gpushare:platform)") + 2:]
    assert section[:3] == [
        "- `calico-system`: removed; its pods are judged like any other namespace's (those that tolerate every "
        "taint are refused at their next create)",
        "- `monitoring`: pools `t4ts` -> every pool",
        "- `logging`: added; its workloads may reach pools `h100mig`",
    ]
    assert tenant_compare_lines(before, before) == [line for line in tenant_compare_lines(before, before)
                                                   if "Platform" not in line]
