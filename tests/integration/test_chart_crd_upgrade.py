"""Upgrading the chart upgrades its CRDs: a release of the previous chart, whose CRDs came from crds/
and so were never upgraded, moves over by the commands docs/install.md gives, and a pool's field that
only the new CRD knows survives; `helm uninstall` keeps the CRDs and the pools."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.fixtures.kube_bed import running_kube_bed
from tests.support.chart import CHART, NO_HOOK_JOBS, adopt_crds

from kafka_balancer_dev.localbed import kube

RELEASE, NAMESPACE = "kb-upgrade", "kb-test-crd-upgrade"
POOL: dict[str, Any] = {
    "apiVersion": "kafkabalancer.io/v1alpha1",
    "kind": "BrokerPool",
    "metadata": {"name": "main", "namespace": NAMESPACE},
    "spec": {
        "kafka": {"bootstrapServers": "kafka-0:9092"},
        "capacity": {"disk": "1Ti", "networkIn": "100M", "networkOut": "100M", "cpu": "8"},
        "demote": [3],
    },
}


@pytest.fixture
def own_api(
    kube_binaries: kube.KubeBinaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[kube.KubeBed]:
    """An apiserver with no CRD yet, for each test: the session's has them, applied by other tests."""
    yield from running_kube_bed(kube_binaries, tmp_path_factory.mktemp("kube-crd-upgrade"))


def previous_chart(into: Path) -> Path:
    """The chart as shipped before crds.enabled (0.1.0 up to a777ee9), made from this one: its
    BrokerPool and BalancerGoal CRDs back in crds/, which Helm installs once and never upgrades, and
    neither the template that renders them nor the hand-over hooks that came with it. (Built here
    rather than taken from git: CI may check out a single commit.) ``demote`` is taken out of its
    BrokerPool CRD: that chart already had the field, so without it the test would prove nothing a
    CRD older than the field would show."""
    chart = into / "charts" / "kafka-balancer"
    shutil.copytree(CHART, chart)
    for crd_file in sorted((chart / "files" / "crds").glob("*.yaml")):
        crd_file.rename(chart / "crds" / crd_file.name)
    shutil.rmtree(chart / "files")
    for template in ("crds.yaml", "handover.yaml"):
        (chart / "templates" / template).unlink()
    path = chart / "crds" / "brokerpools.yaml"
    crd = yaml.safe_load(path.read_text())
    (version,) = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"].pop("demote"), "the previous chart's CRD has no demote to take out"
    path.write_text(yaml.safe_dump(crd))
    return chart


def pool_spec(bed: kube.KubeBed) -> dict[str, Any]:
    got = bed.kubectl("get", "bp", "main", "-n", NAMESPACE, "-o", "json")
    assert got.returncode == 0, got.stderr
    spec: dict[str, Any] = json.loads(got.stdout)["spec"]
    return spec


def write_pool(bed: kube.KubeBed) -> None:
    """The pool as a user's older kubectl sends it: unknown fields are the apiserver's to prune."""
    written = bed.kubectl("apply", "--validate=false", "-f", "-", stdin=yaml.safe_dump(POOL))
    assert written.returncode == 0, written.stderr


def test_an_upgrade_from_the_previous_chart_upgrades_the_crds_and_keeps_a_new_field(
    own_api: kube.KubeBed, tmp_path: Path
) -> None:
    assert own_api.kubectl("create", "namespace", NAMESPACE).returncode == 0
    old = own_api.helm("install", RELEASE, str(previous_chart(tmp_path)), "-n", NAMESPACE)
    assert old.returncode == 0, old.stdout + old.stderr
    kube.wait_established(own_api, "brokerpools.kafkabalancer.io")
    write_pool(own_api)
    assert "demote" not in pool_spec(own_api)  # the old CRD prunes it

    # Helm takes over no object that lacks its ownership: the CRDs came from crds/.
    refused = own_api.helm("upgrade", RELEASE, str(CHART), "-n", NAMESPACE, *NO_HOOK_JOBS)
    assert refused.returncode != 0
    assert "invalid ownership metadata" in refused.stderr, refused.stderr

    adopt_crds(own_api, RELEASE, NAMESPACE)
    # As docs/install.md upgrades: the old release's values, which have no crds.
    upgraded = own_api.helm("upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "--reuse-values", *NO_HOOK_JOBS)
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    write_pool(own_api)
    assert pool_spec(own_api)["demote"] == [3]

    # A further upgrade upgrades them again, now as the release's own objects.
    again = own_api.helm(
        "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "--reuse-values", "--set", "logLevel=debug"
    )
    assert again.returncode == 0, again.stdout + again.stderr

    uninstalled = own_api.helm("uninstall", RELEASE, "-n", NAMESPACE)
    assert uninstalled.returncode == 0, uninstalled.stdout + uninstalled.stderr
    for crd in ("brokerpools.kafkabalancer.io", "balancergoals.kafkabalancer.io"):
        assert own_api.kubectl("get", "crd", crd).returncode == 0, f"helm uninstall deleted {crd}"
    assert pool_spec(own_api)["demote"] == [3]


def test_pools_of_the_values_come_with_the_upgrade_after_the_install_that_made_their_crd(
    own_api: kube.KubeBed,
) -> None:
    """What docs/install.md says of `pools` with crds.enabled: Helm builds every object of a release
    before it creates any, and a BrokerPool's kind is unknown until its CRD exists, so the install that
    creates the CRD cannot create pools; the next upgrade can."""
    namespace = "kb-test-crd-pools"
    assert own_api.kubectl("create", "namespace", namespace).returncode == 0
    pools = [
        "--set", "pools[0].name=main",
        "--set", "pools[0].spec.kafka.bootstrapServers=kafka-0:9092",
        *(arg for key in ("disk=1Ti", "networkIn=1M", "networkOut=1M", "cpu=8")
          for arg in ("--set", f"pools[0].spec.capacity.{key}")),
    ]  # fmt: skip
    refused = own_api.helm("install", "kb-pools", str(CHART), "-n", namespace, *pools, *NO_HOOK_JOBS)
    assert refused.returncode != 0
    assert 'no matches for kind "BrokerPool"' in refused.stderr, refused.stderr

    installed = own_api.helm("install", "kb-pools", str(CHART), "-n", namespace, *NO_HOOK_JOBS)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    upgraded = own_api.helm("upgrade", "kb-pools", str(CHART), "-n", namespace, "--reuse-values", *pools)
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    assert own_api.kubectl("get", "bp", "main", "-n", namespace).returncode == 0
