"""`gpushare:cluster` access, tier, upgrades and apiServer: defaults (the hardened choice) and every bad input."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpushare.model.stack import (
    Access,
    ApiServer,
    ClusterUpgrades,
    Deployer,
    KubernetesCredential,
    MaintenanceWindow,
    NodeOsChannel,
    PrincipalKind,
    Tier,
    UpgradeChannel,
    WeekDay,
)
from gpushare.stackfile.config import load_stack_file
from tests.stack_files import write_stack
from tests.stackfile.test_config import assert_problems, cluster, parse, problems_of, raw_with, valid_raw

C = "gpushare:cluster"
GROUP = "0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90"
OTHER_GROUP = "7d2f4a10-93c1-4b6e-8f0a-1c5e9b3d2a64"


def test_defaults_are_the_hardened_baseline():
    hardened = parse(valid_raw()).cluster
    assert hardened.access == Access(admin_groups=(), deployers=(), kubernetes_credential=KubernetesCredential.TOKEN)
    assert hardened.tier is Tier.STANDARD
    assert hardened.upgrades == ClusterUpgrades(
        channel=UpgradeChannel.PATCH, node_os=NodeOsChannel.NODE_IMAGE,
        window=MaintenanceWindow(day=WeekDay.SUNDAY, start="02:00", hours=4))
    assert hardened.api_server == ApiServer(authorized_ip_ranges=())


def test_every_setting_is_read():
    got = parse(raw_with(cluster(
        access={"adminGroups": [GROUP, OTHER_GROUP.upper()], "grantDeployer": False,
                "deployers": [{"objectId": OTHER_GROUP.upper(), "type": "ServicePrincipal"},
                              {"objectId": GROUP, "type": "Group"}],
                "kubernetesCredential": "kubelogin-azurecli"},
        tier="Free",
        upgrades={"channel": "stable", "nodeOs": "SecurityPatch",
                  "window": {"day": "Saturday", "start": "22:30", "hours": 8}},
        apiServer={"authorizedIpRanges": ["203.0.113.0/24", "198.51.100.7/32"]},
    ))).cluster
    assert got.access == Access(
        admin_groups=(GROUP, OTHER_GROUP),
        deployers=(Deployer(OTHER_GROUP, PrincipalKind.SERVICE_PRINCIPAL), Deployer(GROUP, PrincipalKind.GROUP)),
        kubernetes_credential=KubernetesCredential.KUBELOGIN_AZURECLI)
    assert got.tier is Tier.FREE
    assert got.upgrades == ClusterUpgrades(UpgradeChannel.STABLE, NodeOsChannel.SECURITY_PATCH,
                                    MaintenanceWindow(WeekDay.SATURDAY, "22:30", 8))
    assert got.api_server.authorized_ip_ranges == ("203.0.113.0/24", "198.51.100.7/32")


def test_a_partial_window_keeps_the_other_defaults():
    window = parse(raw_with(cluster(upgrades={"window": {"day": "Wednesday"}}))).cluster.upgrades.window
    assert window == MaintenanceWindow(WeekDay.WEDNESDAY, "02:00", 4)


@pytest.mark.parametrize(("version", "channel"), [("1.36", "patch"), ("1.36.2", "none"), ("1.36.2", "node-image"),
                                                 (None, "rapid")])
def test_versions_the_channel_does_not_move_are_accepted(version, channel):
    changes = {"upgrades": {"channel": channel}}
    if version:
        changes["kubernetesVersion"] = version
    assert parse(raw_with(cluster(**changes))).cluster.kubernetes_version == version


def test_node_image_channel_with_node_image_os_is_accepted():
    upgrades = parse(raw_with(cluster(upgrades={"channel": "node-image", "nodeOs": "NodeImage"}))).cluster.upgrades
    assert upgrades.channel is UpgradeChannel.NODE_IMAGE


REJECTED: list[tuple[str, dict[str, Any], list[tuple[str, tuple[str, ...]]]]] = [
    ("group_not_a_guid", {"access": {"adminGroups": ["platform-admins"]}},
     [(f"{C}.access.adminGroups[0]", ("'platform-admins'", "GUID", "az ad group show"))]),
    ("group_guid_without_dashes", {"access": {"adminGroups": [GROUP.replace("-", "")]}},
     [(f"{C}.access.adminGroups[0]", ("GUID",))]),
    ("group_a_number", {"access": {"adminGroups": [42]}}, [(f"{C}.access.adminGroups[0]", ("42", "GUID"))]),
    ("group_twice", {"access": {"adminGroups": [GROUP, GROUP.upper()]}},
     [(f"{C}.access.adminGroups[1]", ("listed twice",))]),
    ("groups_not_a_list", {"access": {"adminGroups": GROUP}}, [(f"{C}.access.adminGroups", ("a list", GROUP))]),
    ("grant_deployer_not_bool", {"access": {"grantDeployer": "yes"}},
     [(f"{C}.access.grantDeployer", ("true or false", "'yes'"))]),
    ("grant_deployer_true", {"access": {"grantDeployer": True}},
     [(f"{C}.access.grantDeployer", ("no longer supported", "whoever runs the program", "deployers:",
                                     "az ad signed-in-user show --query id -o tsv",
                                     "az ad sp show --id <client ID> --query id -o tsv"))]),
    ("deployer_app_name", {"access": {"deployers": [{"objectId": "ci-deployer", "type": "ServicePrincipal"}]}},
     [(f"{C}.access.deployers[0].objectId", ("'ci-deployer'", "GUID", "az ad sp show"))]),
    ("deployer_without_type", {"access": {"deployers": [{"objectId": GROUP}]}},
     [(f"{C}.access.deployers[0].type", ("required", "ServicePrincipal", "UnmatchedPrincipalType"))]),
    ("deployer_bad_type", {"access": {"deployers": [{"objectId": GROUP, "type": "ManagedIdentity"}]}},
     [(f"{C}.access.deployers[0].type", ("'ManagedIdentity'", "allowed: ServicePrincipal, User, Group"))]),
    ("deployer_twice", {"access": {"deployers": [{"objectId": GROUP, "type": "User"},
                                                 {"objectId": GROUP.upper(), "type": "User"}]}},
     [(f"{C}.access.deployers[1].objectId", ("listed twice",))]),
    ("deployers_not_a_list", {"access": {"deployers": GROUP}}, [(f"{C}.access.deployers", ("a list", "objectId"))]),
    ("credential_unknown", {"access": {"kubernetesCredential": "kubelogin"}},
     [(f"{C}.access.kubernetesCredential", ("'kubelogin'", "token, kubelogin-azurecli, kubelogin-workloadidentity"))]),
    ("access_unknown_key", {"access": {"admins": [GROUP]}},
     [(f"{C}.access.admins", ("unknown key", "adminGroups"))]),
    ("tier_unknown", {"tier": "Platinum"}, [(f"{C}.tier", ("'Platinum'", "allowed: Standard, Free, Premium"))]),
    ("tier_wrong_case", {"tier": "free"}, [(f"{C}.tier", ("case-sensitive", "'Free'"))]),
    ("channel_unknown", {"upgrades": {"channel": "weekly"}},
     [(f"{C}.upgrades.channel", ("'weekly'", "allowed: patch, stable, rapid, node-image, none"))]),
    ("node_os_unknown", {"upgrades": {"nodeOs": "Image"}},
     [(f"{C}.upgrades.nodeOs", ("'Image'", "NodeImage, SecurityPatch, Unmanaged, None"))]),
    ("node_image_channel_with_security_patch", {"upgrades": {"channel": "node-image", "nodeOs": "SecurityPatch"}},
     [(f"{C}.upgrades.nodeOs", ("node-image", "NodeImage", "SecurityPatch"))]),
    ("day_unknown", {"upgrades": {"window": {"day": "Sun"}}},
     [(f"{C}.upgrades.window.day", ("'Sun'", "Sunday, Monday"))]),
    ("window_longer_than_24_hours", {"upgrades": {"window": {"hours": 25}}},
     [(f"{C}.upgrades.window.hours", ("from 4 to 24", "got 25"))]),
    ("window_shorter_than_4_hours", {"upgrades": {"window": {"hours": 2}}},
     [(f"{C}.upgrades.window.hours", ("from 4 to 24", "got 2"))]),
    ("start_not_a_time", {"upgrades": {"window": {"start": "2am"}}},
     [(f"{C}.upgrades.window.start", ("HH:MM", "'2am'"))]),
    ("start_past_midnight", {"upgrades": {"window": {"start": "24:00"}}},
     [(f"{C}.upgrades.window.start", ("HH:MM", "'24:00'"))]),
    ("window_unknown_key", {"upgrades": {"window": {"duration": 4}}},
     [(f"{C}.upgrades.window.duration", ("unknown key", "day, start, hours"))]),
    ("range_not_a_cidr", {"apiServer": {"authorizedIpRanges": ["office"]}},
     [(f"{C}.apiServer.authorizedIpRanges[0]", ("CIDR", "'office'"))]),
    ("range_a_bare_address", {"apiServer": {"authorizedIpRanges": ["203.0.113.7"]}},
     [(f"{C}.apiServer.authorizedIpRanges[0]", ("CIDR", "203.0.113.7/32"))]),
    ("range_bad_prefix", {"apiServer": {"authorizedIpRanges": ["203.0.113.0/33"]}},
     [(f"{C}.apiServer.authorizedIpRanges[0]", ("CIDR", "'203.0.113.0/33'"))]),
    ("range_host_bits", {"apiServer": {"authorizedIpRanges": ["203.0.113.7/24"]}},
     [(f"{C}.apiServer.authorizedIpRanges[0]", ("host bits", "203.0.113.0/24"))]),
    ("range_twice", {"apiServer": {"authorizedIpRanges": ["203.0.113.0/24", "203.0.113.0/24"]}},
     [(f"{C}.apiServer.authorizedIpRanges[1]", ("listed twice",))]),
    ("ranges_not_a_list", {"apiServer": {"authorizedIpRanges": "203.0.113.0/24"}},
     [(f"{C}.apiServer.authorizedIpRanges", ("a list of CIDRs",))]),
    ("more_than_200_ranges",
     {"apiServer": {"authorizedIpRanges": [f"10.{i // 256}.{i % 256}.0/24" for i in range(201)]}},
     [(f"{C}.apiServer.authorizedIpRanges", ("at most 200", "got 201"))]),
    ("patch_channel_with_a_patch_version", {"kubernetesVersion": "1.36.2"},
     [(f"{C}.kubernetesVersion", ("1.36.2", "channel patch", '"1.36"'))]),
    ("stable_channel_with_a_version", {"kubernetesVersion": "1.36", "upgrades": {"channel": "stable"}},
     [(f"{C}.kubernetesVersion", ("stable", "downgrade", "remove kubernetesVersion"))]),
    ("cluster_unknown_key", {"upgrade": {"channel": "patch"}}, [(f"{C}.upgrade", ("did you mean 'upgrades'",))]),
]


@pytest.mark.parametrize(("changes", "expected"), [(c, e) for _, c, e in REJECTED], ids=[i for i, _, _ in REJECTED])
def test_rejects(changes, expected):
    assert_problems(problems_of(raw_with(cluster(**changes))), expected)


def test_every_cluster_problem_is_reported_at_once():
    problems = problems_of(raw_with(cluster(
        access={"adminGroups": ["nope"]}, upgrades={"channel": "weekly", "window": {"day": "Funday", "hours": 30}},
        apiServer={"authorizedIpRanges": ["x"]})))
    assert sorted(p.path for p in problems) == sorted([
        f"{C}.access.adminGroups[0]", f"{C}.upgrades.channel", f"{C}.upgrades.window.day",
        f"{C}.upgrades.window.hours", f"{C}.apiServer.authorizedIpRanges[0]"])


def _window_stack(start: str) -> str:
    return ("config:\n  azure-native:location: westeurope\n  gpushare:cluster:\n    name: c1\n"
            f"    upgrades:\n      window: {{day: Sunday, start: {start}}}\n"
            "  gpushare:pools:\n    - {name: t4, vmSize: Standard_NC4as_T4_v3}\n")


@pytest.mark.parametrize(("written", "number", "quoted"), [("22:30", 1350, '"22:30"'), ("10:00", 600, '"10:00"'),
                                                          ("2:00", 120, '"02:00"')])
def test_unquoted_window_start_read_as_a_number_is_explained(tmp_path, written, number, quoted):
    """PyYAML (YAML 1.1) reads `start: 22:30` as the base-60 number 1350: say so, and the quoted form to write."""
    from gpushare.errors import ConfigError

    assert yaml.safe_load(f"start: {written}") == {"start": number}
    with pytest.raises(ConfigError) as raised:
        load_stack_file(write_stack(tmp_path, _window_stack(written)))
    assert_problems(raised.value.problems, [(f"{C}.upgrades.window.start",
                                             (f"unquoted {written} as the base-60 number {number}",
                                              f"quote it: start: {quoted}"))])


@pytest.mark.parametrize("written", ["02:00", "00:30", "09:59"])
def test_unquoted_window_start_with_a_leading_zero_is_text_and_accepted(tmp_path, written):
    """YAML 1.1's base-60 integers start with 1-9: `02:00` stays the string "02:00" in PyYAML, as in YAML 1.2."""
    assert yaml.safe_load(f"start: {written}") == {"start": written}
    stack = load_stack_file(write_stack(tmp_path, _window_stack(written)))
    assert stack.cluster.upgrades.window.start == written
