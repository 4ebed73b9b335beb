"""The Kubernetes API bed is a real API server: CRD schemas and CEL rules, RBAC, server-side dry runs."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.procs import pid_matches

CHART = Path(__file__).resolve().parents[2] / "charts" / "kafka-balancer"
CRD_NAME = "widgets.test.kafkabalancer.io"

# A throwaway CRD (the project's own CRDs are tested elsewhere): a minimum, an enum and a CEL rule.
WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": "test.kafkabalancer.io",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size", "color"],
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "!has(self.maxSize) || self.size <= self.maxSize",
                                        "message": "size must not exceed maxSize",
                                    }
                                ],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1},
                                    "maxSize": {"type": "integer"},
                                    "color": {"type": "string", "enum": ["red", "green", "blue"]},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def widget(name: str, **spec: object) -> str:
    return json.dumps(
        {"apiVersion": "test.kafkabalancer.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}
    )


@pytest.fixture(scope="module")
def widget_crd(kube_bed: kube.KubeBed) -> Iterator[None]:
    applied = kube_bed.kubectl("apply", "-f", "-", stdin=json.dumps(WIDGET_CRD))
    assert applied.returncode == 0, applied.stderr
    kube.wait_established(kube_bed, CRD_NAME)
    yield
    kube_bed.kubectl("delete", "crd", CRD_NAME, "--wait=false")


def test_custom_resource_round_trips_through_the_api_server(kube_bed: kube.KubeBed, widget_crd: None) -> None:
    created = kube_bed.kubectl(
        "create", "-f", "-", stdin=widget("round-trip", size=3, maxSize=5, color="green")
    )
    assert created.returncode == 0, created.stderr

    got = kube_bed.kubectl("get", "widget", "round-trip", "-o", "json")

    assert got.returncode == 0, got.stderr
    stored = json.loads(got.stdout)
    assert stored["spec"] == {"size": 3, "maxSize": 5, "color": "green"}
    assert stored["metadata"]["namespace"] == "default"
    assert stored["metadata"]["uid"]


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("too-small", {"size": 0, "color": "red"}, "spec.size in body should be greater than or equal to 1"),
        ("bad-color", {"size": 1, "color": "purple"}, 'Unsupported value: "purple"'),
        ("over-max", {"size": 6, "maxSize": 5, "color": "blue"}, "size must not exceed maxSize"),
    ],
)
def test_invalid_custom_resource_is_rejected_with_the_reason(
    kube_bed: kube.KubeBed, widget_crd: None, name: str, spec: dict[str, object], message: str
) -> None:
    created = kube_bed.kubectl("create", "-f", "-", stdin=widget(name, **spec))

    assert created.returncode != 0
    assert "is invalid" in created.stderr
    assert message in created.stderr
    assert kube_bed.kubectl("get", "widget", name).returncode != 0


def test_rbac_forbids_the_unprivileged_user_and_allows_the_admin(kube_bed: kube.KubeBed) -> None:
    crd = json.loads(json.dumps(WIDGET_CRD))
    crd["metadata"]["name"] = "gadgets.test.kafkabalancer.io"
    crd["spec"]["names"] = {
        "plural": "gadgets",
        "singular": "gadget",
        "kind": "Gadget",
        "listKind": "GadgetList",
    }

    namespace = kube_bed.kubectl("create", "namespace", "rbac-probe", user=kube.DEVELOPER)
    definition = kube_bed.kubectl("create", "-f", "-", stdin=json.dumps(crd), user=kube.DEVELOPER)

    assert namespace.returncode != 0
    assert 'User "developer" cannot create resource "namespaces"' in namespace.stderr
    assert definition.returncode != 0
    assert 'cannot create resource "customresourcedefinitions"' in definition.stderr
    assert kube_bed.kubectl("create", "namespace", "rbac-probe").returncode == 0
    admin_crd = kube_bed.kubectl("create", "-f", "-", stdin=json.dumps(crd))
    assert admin_crd.returncode == 0, admin_crd.stderr
    kube_bed.kubectl("delete", "crd", "gadgets.test.kafkabalancer.io", "--wait=false")


def test_chart_lints_and_its_manifests_pass_a_server_side_dry_run(kube_bed: kube.KubeBed) -> None:
    lint = kube_bed.helm("lint", "--strict", str(CHART))
    assert lint.returncode == 0, lint.stdout + lint.stderr

    rendered = kube_bed.helm("template", "kb", str(CHART), "--namespace", "default")
    assert rendered.returncode == 0, rendered.stderr
    kinds = {doc["kind"] for doc in yaml.safe_load_all(rendered.stdout) if doc}
    # The chart's own tests (test_chart.py) check the rest (RBAC, Service).
    assert {"Deployment", "ServiceAccount"} <= kinds

    # The rendered peering object needs the chart's CRDs, which `helm template` leaves out (helm
    # installs crds/ first): without them this test passed only after test_chart.py had applied them.
    crds = kube_bed.kubectl("apply", "--server-side", "-f", str(CHART / "crds"))
    assert crds.returncode == 0, crds.stderr
    applied = kube_bed.kubectl("apply", "--dry-run=server", "-f", "-", stdin=rendered.stdout)

    assert applied.returncode == 0, applied.stderr
    assert "serviceaccount/kb-kafka-balancer created (server dry run)" in applied.stdout
    assert "deployment.apps/kb-kafka-balancer created (server dry run)" in applied.stdout


def test_a_component_that_cannot_start_is_named_with_its_log(
    kube_binaries: kube.KubeBinaries, tmp_path: Path
) -> None:
    false = Path("/bin/false")
    no_etcd = tmp_path / "no-etcd"
    with pytest.raises(BedError, match=r"etcd exited with code 1 while starting; see .*etcd\.log"):
        kube.KubeBed(dataclasses.replace(kube_binaries, etcd=false), no_etcd).start()

    no_apiserver = tmp_path / "no-apiserver"
    with pytest.raises(
        BedError, match=r"kube-apiserver exited with code 1 while starting; see .*apiserver\.log"
    ):
        kube.KubeBed(dataclasses.replace(kube_binaries, kube_apiserver=false), no_apiserver).start()
    # The etcd it had started is stopped again.
    assert processes_mentioning(str(no_apiserver)) == []


def test_up_and_down_commands_leave_a_usable_bed_and_then_nothing(
    kube_binaries: kube.KubeBinaries, tmp_path: Path
) -> None:
    run_dir = tmp_path / "cli"
    command = [sys.executable, "-m", "kafka_balancer_dev.localbed", "kube"]
    up = subprocess.run(
        [*command, "up", "--run-dir", str(run_dir)], capture_output=True, text=True, timeout=300
    )
    try:
        assert up.returncode == 0, up.stderr
        kubeconfig = up.stdout.strip()
        version = subprocess.run(
            [str(kube_binaries.kubectl), "--kubeconfig", kubeconfig, "version", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert version.returncode == 0, version.stderr
        assert json.loads(version.stdout)["serverVersion"]["gitVersion"].startswith("v1.35.")
        assert len(processes_mentioning(str(run_dir))) == 2
    finally:
        down = subprocess.run(
            [*command, "down", "--run-dir", str(run_dir)], capture_output=True, text=True, timeout=60
        )
    assert down.returncode == 0, down.stderr
    assert "stopped kube-apiserver, etcd" in down.stderr
    assert processes_mentioning(str(run_dir)) == []


def processes_mentioning(marker: str) -> list[int]:
    """PIDs of live processes whose command line contains ``marker``."""
    return [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and pid_matches(int(pid), marker)]
