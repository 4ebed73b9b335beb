"""The Helm chart against the real apiserver: it lints, renders objects the apiserver accepts, installs,
and its RBAC lets the operator's ServiceAccount do what the operator does and nothing more."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_balancer_dev.localbed import kube

CHART = Path(__file__).resolve().parents[2] / "charts" / "kafka-balancer"
# The bed's apiserver; without it helm renders for its built-in default version.
KUBE_VERSION = "1.35.0"
RELEASE_NAMESPACE = "kb-test-chart"
RELEASE = "kb"
OPERATOR = f"system:serviceaccount:{RELEASE_NAMESPACE}:{RELEASE}-kafka-balancer"


def render(bed: kube.KubeBed, *values: str) -> list[dict[str, Any]]:
    sets = [arg for value in values for arg in ("--set", value)]
    rendered = bed.helm(
        "template", RELEASE, str(CHART), "-n", RELEASE_NAMESPACE, "--kube-version", KUBE_VERSION, *sets
    )
    assert rendered.returncode == 0, rendered.stderr
    return [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]


def test_chart_lints(kube_bed: kube.KubeBed) -> None:
    lint = kube_bed.helm("lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION)
    assert lint.returncode == 0, lint.stdout + lint.stderr


@pytest.mark.parametrize(
    "values",
    [
        (),
        ("watchNamespaces={team-a,team-b}", "scoring.sparkOnKubernetes=true", "metrics.enabled=false"),
    ],
    ids=["defaults", "namespaced-spark-no-metrics"],
)
def test_rendered_manifests_pass_a_server_side_dry_run(
    kube_bed: kube.KubeBed, values: tuple[str, ...]
) -> None:
    docs = render(kube_bed, *values)
    namespaces = {doc["metadata"].get("namespace") for doc in docs} - {None}
    for namespace in namespaces:
        kube_bed.kubectl("create", "namespace", str(namespace))
    # As helm does: the chart's CRDs first (its templates include a kopf peering object).
    crds = kube_bed.kubectl("apply", "--server-side", "-f", str(CHART / "crds"))
    assert crds.returncode == 0, crds.stderr
    kube.wait_established(kube_bed, "clusterkopfpeerings.kopf.dev")
    kube.wait_established(kube_bed, "kopfpeerings.kopf.dev")

    applied = kube_bed.kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(docs))

    assert applied.returncode == 0, applied.stderr
    assert "deployment.apps/kb-kafka-balancer created (server dry run)" in applied.stdout


def test_the_deployment_runs_the_operator_hardened_with_kopf_probes(kube_bed: kube.KubeBed) -> None:
    (deployment,) = [d for d in render(kube_bed) if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["args"][:3] == [
        "run",
        "--peering=kafka-balancer",
        "--liveness=http://0.0.0.0:8080/healthz",
    ]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["resources"]["limits"]["memory"]


def test_sparkapplications_are_granted_only_for_spark_on_kubernetes(kube_bed: kube.KubeBed) -> None:
    def granted(*values: str) -> set[str]:
        (role,) = [d for d in render(kube_bed, *values) if d["kind"] == "ClusterRole"]
        return {group for rule in role["rules"] for group in rule["apiGroups"]}

    assert "sparkoperator.k8s.io" not in granted()
    assert "sparkoperator.k8s.io" in granted("scoring.sparkOnKubernetes=true")


@pytest.fixture(scope="module")
def installed(kube_bed: kube.KubeBed) -> Iterator[None]:
    kube_bed.kubectl("create", "namespace", RELEASE_NAMESPACE)
    installed = kube_bed.helm(
        "install", RELEASE, str(CHART), "-n", RELEASE_NAMESPACE, "--set", "scoring.sparkOnKubernetes=true"
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    yield
    kube_bed.helm("uninstall", RELEASE, "-n", RELEASE_NAMESPACE)


def test_helm_install_creates_the_crds_and_the_operators_objects(
    kube_bed: kube.KubeBed, installed: None
) -> None:
    for crd in (
        "brokerpools.kafkabalancer.io",
        "balancergoals.kafkabalancer.io",
        "clusterkopfpeerings.kopf.dev",
        "kopfpeerings.kopf.dev",
    ):
        kube.wait_established(kube_bed, crd)
    for kind in ("deployment", "serviceaccount", "service", "role", "rolebinding"):
        got = kube_bed.kubectl(
            "get", kind, "-n", RELEASE_NAMESPACE, "-l", "app.kubernetes.io/instance=kb", "-o", "json"
        )
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["items"], f"no {kind} installed"
    assert kube_bed.kubectl("get", "clusterkopfpeering", "kafka-balancer").returncode == 0
    for kind in ("clusterrole", "clusterrolebinding"):
        assert kube_bed.kubectl("get", kind, "kb-kafka-balancer").returncode == 0
    status = kube_bed.helm("status", RELEASE, "-n", RELEASE_NAMESPACE)
    assert "STATUS: deployed" in status.stdout


@pytest.mark.parametrize(
    ("verb", "resource", "namespace"),
    [
        ("watch", "brokerpools.kafkabalancer.io", "any-team"),
        ("patch", "brokerpools.kafkabalancer.io/status", "any-team"),
        ("patch", "balancergoals.kafkabalancer.io/status", "any-team"),
        ("create", "configmaps", "any-team"),
        ("delete", "configmaps", "any-team"),
        ("create", "events", "any-team"),
        ("patch", "clusterkopfpeerings.kopf.dev", ""),
        ("get", "secrets", RELEASE_NAMESPACE),
    ],
)
def test_the_operator_may_do_what_it_needs(
    kube_bed: kube.KubeBed, installed: None, verb: str, resource: str, namespace: str
) -> None:
    assert can_i(kube_bed, verb, resource, namespace) == "yes"


@pytest.mark.parametrize(
    ("verb", "resource", "namespace"),
    [
        ("get", "secrets", "any-team"),
        ("list", "secrets", RELEASE_NAMESPACE),
        ("delete", "namespaces", ""),
        ("delete", "brokerpools.kafkabalancer.io", "any-team"),
        ("update", "brokerpools.kafkabalancer.io", "any-team"),
        ("create", "pods", RELEASE_NAMESPACE),
        ("create", "customresourcedefinitions.apiextensions.k8s.io", ""),
        ("create", "clusterrolebindings.rbac.authorization.k8s.io", ""),
    ],
)
def test_the_operator_may_not_do_more(
    kube_bed: kube.KubeBed, installed: None, verb: str, resource: str, namespace: str
) -> None:
    assert can_i(kube_bed, verb, resource, namespace) == "no"


def can_i(bed: kube.KubeBed, verb: str, resource: str, namespace: str) -> str:
    scope = ["-n", namespace] if namespace else []
    answer = bed.kubectl("auth", "can-i", verb, resource, *scope, "--as", OPERATOR)
    return answer.stdout.strip()
