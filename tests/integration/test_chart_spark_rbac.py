"""The chart's RBAC for spark-submit scoring (``scoring.sparkSubmit.enabled``), as the real apiserver
decides it: the Spark driver's ServiceAccount may manage its executors' pods, ConfigMaps and Services in
the pools' namespace and nothing else; the operator may submit and watch drivers there and nowhere else.
(The node tier runs a real driver and executors on these grants: tests/node/test_spark.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support.chart import BESIDE_ANOTHER_RELEASE, CHART, NO_HOOK_JOBS, apply_crds

from kafka_balancer_dev.localbed import kube

RELEASE, RELEASE_NAMESPACE, POOLS = "kbs", "kb-spark-release", "kb-spark-pools"
DRIVER = f"system:serviceaccount:{POOLS}:spark"
OPERATOR = f"system:serviceaccount:{RELEASE_NAMESPACE}:{RELEASE}-kafka-balancer"


@pytest.fixture(scope="module")
def installed(kube_bed: kube.KubeBed) -> Iterator[None]:
    for namespace in (RELEASE_NAMESPACE, POOLS):
        kube_bed.kubectl("create", "namespace", namespace)
    apply_crds(kube_bed)
    done = kube_bed.helm(
        "install", RELEASE, str(CHART), "-n", RELEASE_NAMESPACE,
        "--set", "peering=kb-spark-rbac",
        "--set", "scoring.sparkSubmit.enabled=true",
        "--set", f"scoring.sparkSubmit.namespaces={{{POOLS}}}",
        *BESIDE_ANOTHER_RELEASE, *NO_HOOK_JOBS,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    yield
    kube_bed.helm("uninstall", RELEASE, "-n", RELEASE_NAMESPACE)
    for namespace in (RELEASE_NAMESPACE, POOLS):
        kube_bed.kubectl("delete", "namespace", namespace, "--wait=false")


def can_i(bed: kube.KubeBed, who: str, verb: str, resource: str, namespace: str) -> str:
    # kubectl reads "pods/exec" as the pod named exec: a subresource is its own flag.
    resource, _, subresource = resource.partition("/")
    extra = ["--subresource", subresource] if subresource else []
    argv = ["auth", "can-i", verb, resource, *extra, "-n", namespace, "--as", who]
    return bed.kubectl(*argv).stdout.strip()


@pytest.mark.parametrize(
    ("verb", "resource"),
    [
        # Executors: created, watched, deleted (one by one or all at once when the job ends).
        *((verb, "pods") for verb in ("create", "get", "list", "watch", "delete", "deletecollection")),
        # The executors' ConfigMap, written with server-side apply.
        *((verb, "configmaps") for verb in ("create", "get", "patch", "delete")),
        ("create", "services"),
    ],
)
def test_the_spark_driver_may_manage_its_executors_in_the_pools_namespace(
    kube_bed: kube.KubeBed, installed: None, resource: str, verb: str
) -> None:
    assert can_i(kube_bed, DRIVER, verb, resource, POOLS) == "yes"


@pytest.mark.parametrize(
    ("verb", "resource", "namespace"),
    [
        ("get", "secrets", POOLS),
        ("list", "secrets", POOLS),
        # Nothing into other pods (a pool's driver into another pool's), nor their status (where a
        # driver's outputs digest is read from), nor tokens of other accounts.
        ("create", "pods/exec", POOLS),
        ("create", "pods/attach", POOLS),
        ("patch", "pods/ephemeralcontainers", POOLS),
        ("patch", "pods/status", POOLS),
        ("create", "serviceaccounts/token", POOLS),
        ("create", "pods", RELEASE_NAMESPACE),
        ("create", "pods", "any-team"),
        ("patch", "brokerpools.kafkabalancer.io", POOLS),
        ("create", "persistentvolumeclaims", POOLS),
        ("create", "roles.rbac.authorization.k8s.io", POOLS),
    ],
)
def test_the_spark_driver_may_not_do_more(
    kube_bed: kube.KubeBed, installed: None, verb: str, resource: str, namespace: str
) -> None:
    assert can_i(kube_bed, DRIVER, verb, resource, namespace) == "no"


@pytest.mark.parametrize(
    ("verb", "resource"),
    [
        # spark-submit: the driver pod, its ConfigMap, headless Service and NetworkPolicy (server-side
        # apply).
        ("create", "pods"),
        ("patch", "services"),
        ("create", "services"),
        ("patch", "configmaps"),
        ("create", "networkpolicies.networking.k8s.io"),
        ("patch", "networkpolicies.networking.k8s.io"),
        # The operator: watching the driver, its log for a failure's reason, deleting it once read.
        ("get", "pods"),
        ("list", "pods"),
        ("get", "pods/log"),
        ("delete", "pods"),
    ],
)
def test_the_operator_may_submit_and_watch_drivers_in_the_pools_namespace(
    kube_bed: kube.KubeBed, installed: None, verb: str, resource: str
) -> None:
    assert can_i(kube_bed, OPERATOR, verb, resource, POOLS) == "yes"


@pytest.mark.parametrize("namespace", [RELEASE_NAMESPACE, "any-team"])
def test_the_operator_may_not_run_pods_outside_the_pools_namespaces(
    kube_bed: kube.KubeBed, installed: None, namespace: str
) -> None:
    assert can_i(kube_bed, OPERATOR, "create", "pods", namespace) == "no"
    assert can_i(kube_bed, OPERATOR, "create", "services", namespace) == "no"
    assert can_i(kube_bed, OPERATOR, "patch", "networkpolicies.networking.k8s.io", namespace) == "no"


def test_the_chart_renders_no_spark_grants_unless_enabled(kube_bed: kube.KubeBed) -> None:
    rendered = kube_bed.helm("template", RELEASE, str(CHART), "-n", RELEASE_NAMESPACE)
    assert rendered.returncode == 0, rendered.stderr
    assert "spark-driver" not in rendered.stdout and "spark-submit" not in rendered.stdout
