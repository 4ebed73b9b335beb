"""The Helm chart against the real apiserver: it lints, renders objects the apiserver accepts, installs,
and its RBAC lets the operator's ServiceAccount do what the operator does and nothing more."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.chart import (
    BESIDE_ANOTHER_RELEASE,
    CHART,
    KUBE_VERSION,
    NO_HOOK_JOBS,
    RELEASE,
    RELEASE_NAMESPACE,
    adopt_crds,
    apply_crds,
    render,
)

from kafka_balancer.api import Scoring
from kafka_balancer.k8s.settings import spark_settings
from kafka_balancer.k8s.spark_runs import SPARK_UID
from kafka_balancer.k8s.spark_submit import driver_template, executor_template
from kafka_balancer.scoring.launch import ScoringRequest
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.procs import wait_until

OPERATOR = f"system:serviceaccount:{RELEASE_NAMESPACE}:{RELEASE}-kafka-balancer"
# The scale-down webhook's ValidatingWebhookConfiguration: cluster-scoped, named with the namespace.
WEBHOOK = f"{RELEASE}-kafka-balancer-{RELEASE_NAMESPACE}-scale-down"
VWC = "validatingwebhookconfigurations.admissionregistration.k8s.io"
# A scoring run's request, for the Spark pods' templates.
REQUEST = ScoringRequest(
    namespace="team-a",
    pool="main",
    pool_uid="uid-1",
    run="0001700000000000",
    samples=Path("/samples"),
    topology={"brokers": []},
    goals={"apiVersion": "v1", "kind": "List", "items": []},
    window_ms=60_000,
    windows=1,
    spec=Scoring(),
)


def test_chart_lints(kube_bed: kube.KubeBed) -> None:
    lint = kube_bed.helm("lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION)
    assert lint.returncode == 0, lint.stdout + lint.stderr


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("replicaCount=two", "at '/replicaCount': got string, want integer"),
        ("replicaCount=0", "at '/replicaCount': minimum: got 0, want 1"),
        ("metrics.port=70000", "at '/metrics/port': maximum: got 70,000, want 65,535"),
        ("probes.port=0", "at '/probes/port': minimum: got 0, want 1"),
        ("replicas=2", "additional properties 'replicas' not allowed"),
        ("scoring.interval=60", "at '/scoring': additional properties 'interval' not allowed"),
        ("scoring.s3.endpoint=minio:9000", "at '/scoring/s3/endpoint': 'minio:9000' does not match pattern"),
        ("scoring.storageSecret=S3_Keys", "at '/scoring/storageSecret': 'S3_Keys' does not match pattern"),
        ("image.pullPolicy=Sometimes", "at '/image/pullPolicy': value must be one of"),
        ("watchNamespaces={Team_A}", "at '/watchNamespaces/0': 'Team_A' does not match pattern"),
        ("clusterWide=yes", "at '/clusterWide': got string, want boolean"),
        ("webhook.failurePolicy=Sometimes", "at '/webhook/failurePolicy': value must be one of"),
        ("logFormat=logfmt", "at '/logFormat': value must be one of"),
        ("image.digest=latest", "at '/image/digest': 'latest' does not match pattern"),
        ("metrics.podMonitor.interval=5x", "at '/metrics/podMonitor/interval': '5x' does not match pattern"),
        # The apiserver allows at most 30 s; a check's three Kafka calls may take 15.
        ("webhook.timeoutSeconds=60", "at '/webhook/timeoutSeconds': maximum: got 60, want 30"),
        ("webhook.timeoutSeconds=5", "at '/webhook/timeoutSeconds': minimum: got 5, want 10"),
        (
            "networkPolicy.apiServer.cidrs={10.0.0.10}",
            "at '/networkPolicy/apiServer/cidrs/0': '10.0.0.10' does not match pattern",
        ),
        # A misspelt alert would otherwise keep its default silently.
        (
            "alerts.rules.KafkaBalancerMoveStuk.for=5m",
            "at '/alerts/rules': additional properties 'KafkaBalancerMoveStuk' not allowed",
        ),
    ],
)
def test_an_invalid_value_is_refused_naming_it(kube_bed: kube.KubeBed, value: str, named: str) -> None:
    for command in (
        ("template", RELEASE, str(CHART), "--kube-version", KUBE_VERSION),
        ("install", RELEASE, str(CHART), "-n", RELEASE_NAMESPACE, "--dry-run"),
    ):
        refused = kube_bed.helm(*command, "--set", value)

        assert refused.returncode != 0, f"helm {command[0]} accepted {value}"
        assert "values don't meet the specifications of the schema" in refused.stderr, refused.stderr
        assert named in refused.stderr, refused.stderr


@pytest.mark.parametrize("monitor", ["serviceMonitor", "podMonitor"])
def test_a_monitor_without_metrics_is_refused_with_a_sentence(kube_bed: kube.KubeBed, monitor: str) -> None:
    refused = kube_bed.helm(
        "template", RELEASE, str(CHART), "--kube-version", KUBE_VERSION,
        "--set", f"metrics.{monitor}.enabled=true", "--set", "metrics.enabled=false",
    )  # fmt: skip
    assert refused.returncode != 0, refused.stdout
    assert f"metrics.{monitor}.enabled needs metrics.enabled: without it there is nothing to scrape" in (
        refused.stderr
    )


def test_the_monitors_select_the_releases_metrics_from_the_namespace_they_are_put_in(
    kube_bed: kube.KubeBed,
) -> None:
    docs = render(
        kube_bed,
        "metrics.serviceMonitor.enabled=true",
        "metrics.serviceMonitor.namespace=monitoring",
        "metrics.serviceMonitor.labels.release=kps",
        "metrics.podMonitor.enabled=true",
    )
    (service,) = [d for d in _of_kind(docs, "Service") if d["metadata"]["name"].endswith("-metrics")]
    (service_monitor,) = _of_kind(docs, "ServiceMonitor")
    (pod_monitor,) = _of_kind(docs, "PodMonitor")
    (deployment,) = _of_kind(docs, "Deployment")
    assert service_monitor["metadata"]["namespace"] == "monitoring"
    assert service_monitor["metadata"]["labels"]["release"] == "kps"
    assert pod_monitor["metadata"]["namespace"] == RELEASE_NAMESPACE
    for monitor in (service_monitor, pod_monitor):
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": [RELEASE_NAMESPACE]}
    # The ServiceMonitor's selector picks the metrics Service alone, by name of its port.
    selected = service_monitor["spec"]["selector"]["matchLabels"]
    assert selected.items() <= service["metadata"]["labels"].items()
    assert [e["port"] for e in service_monitor["spec"]["endpoints"]] == [
        p["name"] for p in service["spec"]["ports"]
    ]
    # The PodMonitor's picks the operator's pods, by name of their container port.
    pod = deployment["spec"]["template"]
    assert pod_monitor["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    ports = {p["name"] for p in pod["spec"]["containers"][0]["ports"]}
    assert pod_monitor["spec"]["podMetricsEndpoints"][0]["port"] in ports
    others = [d for d in _of_kind(docs, "Service") if d is not service]
    assert all(not selected.items() <= d["metadata"]["labels"].items() for d in others), "another Service"


def test_the_values_the_readme_and_values_yaml_show_render(kube_bed: kube.KubeBed, tmp_path: Path) -> None:
    readme_sets = re.findall(r"--set ([^\s\\`]+)", (CHART.parents[1] / "README.md").read_text())
    assert readme_sets, "the README's helm install sets no value any more"
    # The pools example in values.yaml's comment.
    pools = tmp_path / "pools.yaml"
    pools.write_text(
        yaml.safe_dump(
            {
                "pools": [
                    {
                        "name": "main",
                        "spec": {
                            "kafka": {"bootstrapServers": "kafka-0.kafka:9092"},
                            "capacity": {
                                "disk": "2Ti",
                                "networkIn": "125M",
                                "networkOut": "125M",
                                "cpu": "8",
                            },
                        },
                    }
                ]
            }
        )
    )

    docs = render(kube_bed, *readme_sets, values_file=pools)

    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "registry.example.com/kafka-balancer:0.1.0"
    )
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "BrokerPool"] == ["main"]


NETWORK_POLICY = (
    "networkPolicy.enabled=true",
    "networkPolicy.apiServer.cidrs={10.0.0.10/32}",
    "networkPolicy.kafka.to[0].ipBlock.cidr=10.1.0.0/16",
)


@pytest.mark.parametrize(
    "values",
    [
        (),
        ("watchNamespaces={team-a,team-b}", "scoring.sparkApplications=true", "metrics.enabled=false"),
        ("dashboards.enabled=true",),
        (*NETWORK_POLICY, "networkPolicy.extraEgress[0].ports[0].port=9091"),
    ],
    ids=["defaults", "namespaced-spark-no-metrics", "dashboard", "network-policy"],
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
    assert container["args"][:6] == [
        "run",
        "--peering=kafka-balancer",
        "--peering-lifetime=60",
        "--log-format=text",
        "--log-level=info",
        "--liveness=http://0.0.0.0:8080/healthz",
    ]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["resources"]["limits"]["memory"]


KNOBS = """
fullnameOverride: balancer
replicaCount: 2
image: {digest: "sha256:%s"}
imagePullSecrets: [{name: regcred}]
podAnnotations: {team.example.com/owner: platform}
podLabels: {team.example.com/cost-center: "42"}
priorityClassName: system-cluster-critical
podSecurityContext: {runAsUser: null, runAsGroup: null, fsGroup: null}
extraEnv: [{name: HTTPS_PROXY, value: "http://proxy:3128"}]
extraVolumes: [{name: ca, configMap: {name: corporate-ca}}]
extraVolumeMounts: [{name: ca, mountPath: /etc/ssl/corporate, readOnly: true}]
topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway,
     labelSelector: {matchLabels: {app.kubernetes.io/name: kafka-balancer}}}
""" % ("ab" * 32)


def test_the_common_knobs_reach_the_pod_and_pass_a_server_side_dry_run(
    kube_bed: kube.KubeBed, tmp_path: Path
) -> None:
    knobs = tmp_path / "knobs.yaml"
    knobs.write_text(KNOBS)
    docs = render(kube_bed, values_file=knobs)
    (deployment,) = _of_kind(docs, "Deployment")
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]

    assert deployment["metadata"]["name"] == "balancer"
    assert container["image"] == f"ghcr.io/kafka-balancer/operator@sha256:{'ab' * 32}"
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["metadata"]["annotations"]["team.example.com/owner"] == "platform"
    assert "kafkabalancer.io/webhook-tls-sha256" in pod["metadata"]["annotations"]
    assert pod["metadata"]["labels"]["team.example.com/cost-center"] == "42"
    assert pod["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE
    assert pod["spec"]["priorityClassName"] == "system-cluster-critical"
    # OpenShift's restricted-v2 assigns the user and group: nulls leave them out.
    assert pod["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container["env"][-1] == {"name": "HTTPS_PROXY", "value": "http://proxy:3128"}
    assert {"name": "ca", "configMap": {"name": "corporate-ca"}} in pod["spec"]["volumes"]
    assert container["volumeMounts"][-1]["mountPath"] == "/etc/ssl/corporate"
    assert pod["spec"]["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
    (budget,) = _of_kind(docs, "PodDisruptionBudget")
    assert budget["spec"] == {
        "maxUnavailable": 1,
        "selector": {
            "matchLabels": {"app.kubernetes.io/name": "kafka-balancer", "app.kubernetes.io/instance": RELEASE}
        },
    }
    assert _of_kind(render(kube_bed), "PodDisruptionBudget") == []  # one replica: nothing to keep

    for namespace in {doc["metadata"].get("namespace") for doc in docs} - {None}:
        kube_bed.kubectl("create", "namespace", str(namespace))
    crds = kube_bed.kubectl("apply", "--server-side", "-f", str(CHART / "crds"))
    assert crds.returncode == 0, crds.stderr
    kube.wait_established(kube_bed, "kopfpeerings.kopf.dev")
    applied = kube_bed.kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(docs))
    assert applied.returncode == 0, applied.stderr
    assert "deployment.apps/balancer created (server dry run)" in applied.stdout


@pytest.mark.parametrize(
    ("values", "run_as_user"), [((), SPARK_UID), (("podSecurityContext.runAsUser=null",), None)]
)
def test_the_spark_pods_run_as_the_operators_pod_runs(
    kube_bed: kube.KubeBed, values: tuple[str, ...], run_as_user: int | None
) -> None:
    """OpenShift's restricted-v2 refuses a pod that names a uid outside its namespace's range: with
    the operator pod's uid left to the platform, the Spark pods name none either."""
    spark = ("scoring.sparkSubmit.enabled=true", "scoring.storage=s3a://bucket/kb")
    (deployment,) = _of_kind(render(kube_bed, *spark, *values), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("value", "") for item in container["env"]}
    settings = spark_settings(env)
    assert settings is not None and settings.run_as_user == run_as_user
    for template in (driver_template(REQUEST, run_as_user), executor_template(run_as_user)):
        assert template["spec"]["securityContext"].get("runAsUser") == run_as_user
        assert template["spec"]["securityContext"]["runAsNonRoot"] is True
        (spark,) = template["spec"]["containers"]
        assert spark["securityContext"].get("runAsUser") == run_as_user


def test_the_log_format_and_level_are_the_values(kube_bed: kube.KubeBed) -> None:
    (deployment,) = [
        d for d in render(kube_bed, "logFormat=json", "logLevel=warning") if d["kind"] == "Deployment"
    ]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]

    assert {"--log-format=json", "--log-level=warning"} <= set(container["args"])


def test_cleartext_credentials_are_allowed_only_by_the_charts_value(kube_bed: kube.KubeBed) -> None:
    def env(*values: str) -> dict[str, Any]:
        (deployment,) = [d for d in render(kube_bed, *values) if d["kind"] == "Deployment"]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        return {var["name"]: var.get("value") for var in container["env"]}

    assert "KAFKA_BALANCER_ALLOW_CLEARTEXT_CREDENTIALS" not in env()
    allowed = env("kafka.allowCleartextCredentials=true")
    assert allowed["KAFKA_BALANCER_ALLOW_CLEARTEXT_CREDENTIALS"] == "true"


def test_sparkapplications_are_granted_only_for_spark_on_kubernetes(kube_bed: kube.KubeBed) -> None:
    def granted(*values: str) -> set[str]:
        roles = [d for d in render(kube_bed, *values) if d["kind"] in ("Role", "ClusterRole")]
        return {group for role in roles for rule in role["rules"] for group in rule["apiGroups"]}

    assert "sparkoperator.k8s.io" not in granted()
    assert "sparkoperator.k8s.io" in granted("scoring.sparkApplications=true")
    assert "sparkoperator.k8s.io" in granted("scoring.sparkApplications=true", "clusterWide=true")


def test_the_storage_secret_reaches_the_operator_as_env_and_never_as_a_value(kube_bed: kube.KubeBed) -> None:
    def env(*values: str) -> dict[str, Any]:
        (deployment,) = [d for d in render(kube_bed, *values) if d["kind"] == "Deployment"]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        return {var["name"]: var.get("value", var.get("valueFrom")) for var in container["env"]}

    spark = ("scoring.sparkApplications=true", "scoring.storage=s3a://kb/prefix")
    with_secret = env(*spark, "scoring.s3.endpoint=http://minio.storage:9000", "scoring.storageSecret=kb-s3")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert with_secret[key] == {"secretKeyRef": {"name": "kb-s3", "key": key}}
    assert with_secret["KAFKA_BALANCER_STORAGE_SECRET"] == "kb-s3"
    assert (
        with_secret["AWS_ENDPOINT_URL"]
        == with_secret["KAFKA_BALANCER_S3_ENDPOINT"]
        == "http://minio.storage:9000"
    )
    assert with_secret["KAFKA_BALANCER_S3_PATH_STYLE"] == "true"

    # No Secret, no endpoint: the pods' own identity against AWS S3.
    own = env(*spark)
    assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"} & own.keys()
    assert "KAFKA_BALANCER_STORAGE_SECRET" not in own


@pytest.fixture(scope="module")
def installed(kube_bed: kube.KubeBed) -> Iterator[None]:
    kube_bed.kubectl("create", "namespace", RELEASE_NAMESPACE)
    # Other tests of the session apply the CRDs with kubectl.
    adopt_crds(kube_bed, RELEASE, RELEASE_NAMESPACE)
    installed = kube_bed.helm(
        "install", RELEASE, str(CHART), "-n", RELEASE_NAMESPACE,
        "--set", "clusterWide=true", "--set", "scoring.sparkApplications=true", *NO_HOOK_JOBS,
    )  # fmt: skip
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
        assert kube_bed.kubectl("get", kind, f"kb-kafka-balancer-{RELEASE_NAMESPACE}").returncode == 0
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
        # A pool's capacity may be read from the StatefulSet it names.
        ("get", "statefulsets.apps", "any-team"),
        ("patch", "clusterkopfpeerings.kopf.dev/kafka-balancer", ""),
        ("get", "secrets", RELEASE_NAMESPACE),
        # kopf follows CRDs (test_chart_rbac.py runs the operator on this account).
        ("watch", "customresourcedefinitions.apiextensions.k8s.io", ""),
        # It scopes the scale-down webhook's configuration to the pools' StatefulSets.
        ("get", f"{VWC}/{WEBHOOK}", ""),
        ("update", f"{VWC}/{WEBHOOK}", ""),
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
        ("patch", "customresourcedefinitions.apiextensions.k8s.io", ""),
        # Only a namespaced install's kopf lists namespaces.
        ("list", "namespaces", ""),
        ("create", "clusterrolebindings.rbac.authorization.k8s.io", ""),
        # Its own webhook's configuration only: no other admission webhook is its to change.
        ("update", f"{VWC}/someone-elses", ""),
        ("list", VWC, ""),
        ("create", VWC, ""),
        ("delete", f"{VWC}/{WEBHOOK}", ""),
        ("update", "mutatingwebhookconfigurations.admissionregistration.k8s.io", ""),
    ],
)
def test_the_operator_may_not_do_more(
    kube_bed: kube.KubeBed, installed: None, verb: str, resource: str, namespace: str
) -> None:
    assert can_i(kube_bed, verb, resource, namespace) == "no"


def can_i(bed: kube.KubeBed, verb: str, resource: str, namespace: str, who: str = OPERATOR) -> str:
    scope = ["-n", namespace] if namespace else []
    answer = bed.kubectl("auth", "can-i", verb, resource, *scope, "--as", who)
    return answer.stdout.strip()


# Least privilege without clusterWide: the rights each install must not have, and those it needs.
# RBAC has no deny, so every "no" below is a grant the chart no longer makes.
DEFAULTS = ("kbd", "kb-lp-defaults", "kb-lp-defaults")  # release, its namespace, the pools' namespace
WATCHING = ("kbw", "kb-lp-release", "kb-lp-pools")


@pytest.fixture(scope="module", params=[DEFAULTS, WATCHING], ids=["defaults", "watchNamespaces"])
def served(kube_bed: kube.KubeBed, request: pytest.FixtureRequest) -> Iterator[tuple[str, str, str]]:
    """The chart installed with default values, or with watchNamespaces: (who, release ns, pools ns)."""
    release, namespace, pools = request.param
    for each in {namespace, pools}:
        kube_bed.kubectl("create", "namespace", each)
    values = [] if pools == namespace else ["--set", f"watchNamespaces={{{pools}}}"]
    apply_crds(kube_bed)
    done = kube_bed.helm(
        "install", release, str(CHART), "-n", namespace, "--set", f"peering={release}", *values,
        *BESIDE_ANOTHER_RELEASE, *NO_HOOK_JOBS,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    who = f"system:serviceaccount:{namespace}:{release}-kafka-balancer"
    # The apiserver authorizes from a cache of the RBAC objects: a "no" before the bindings reach it
    # would prove nothing.
    wait_until(
        lambda: can_i(kube_bed, "watch", "brokerpools.kafkabalancer.io", pools, who) == "yes",
        timeout_s=30,
        what=f"the chart's RBAC to be in force for {who}",
    )
    yield who, namespace, pools
    kube_bed.helm("uninstall", release, "-n", namespace)
    for each in {namespace, pools}:
        kube_bed.kubectl("delete", "namespace", each, "--wait=false")


@pytest.mark.parametrize(
    ("verb", "resource", "where"),
    [
        *((verb, "configmaps", "kube-system") for verb in ("create", "update", "patch", "delete")),
        ("create", "leases.coordination.k8s.io", "kube-system"),
        ("update", "leases.coordination.k8s.io", "kube-system"),
        ("create", "leases.coordination.k8s.io", "any-team"),
        ("create", "configmaps", "any-team"),
        ("watch", "brokerpools.kafkabalancer.io", "any-team"),
        # Nothing lists or patches the pools' ConfigMaps: they are read by name, written whole.
        ("list", "configmaps", "pools"),
        ("patch", "configmaps", "pools"),
        # Without scoring.sparkSubmit no pod and no NetworkPolicy anywhere, the pools' namespace included.
        ("create", "pods", "pools"),
        ("delete", "pods", "pools"),
        ("create", "networkpolicies.networking.k8s.io", "pools"),
        ("create", "services", "pools"),
        # Status is patched, Events created: nothing replaces the one or rewrites the other.
        ("update", "brokerpools.kafkabalancer.io/status", "pools"),
        ("patch", "events", "pools"),
        ("create", "events.events.k8s.io", "pools"),
        # The pools' StatefulSets are read, never changed: a scale-down waits for the user's retry.
        ("update", "statefulsets.apps", "pools"),
        ("patch", "statefulsets.apps/scale", "pools"),
        # Only the peering object the chart made, not one of another operator's.
        ("patch", "kopfpeerings.kopf.dev/someone-elses", "pools"),
        ("patch", "clusterkopfpeerings.kopf.dev/kafka-balancer", ""),
    ],
)
def test_the_operator_may_not_write_where_it_does_not_serve(
    kube_bed: kube.KubeBed, served: tuple[str, str, str], verb: str, resource: str, where: str
) -> None:
    who, _, pools = served
    namespace = pools if where == "pools" else where
    assert can_i(kube_bed, verb, resource, namespace, who) == "no"


def test_a_namespaced_install_may_change_its_own_webhooks_configuration_and_no_other(
    kube_bed: kube.KubeBed, served: tuple[str, str, str]
) -> None:
    who, namespace, _ = served
    release = who.rsplit(":", 1)[1].removesuffix("-kafka-balancer")
    own = f"{release}-kafka-balancer-{namespace}-scale-down"
    for verb in ("get", "update"):
        assert can_i(kube_bed, verb, f"{VWC}/{own}", "", who) == "yes"
    assert can_i(kube_bed, "update", f"{VWC}/{WEBHOOK}", "", who) == "no"
    for verb in ("list", "create", "delete", "patch"):
        assert can_i(kube_bed, verb, f"{VWC}/{own}" if verb != "list" else VWC, "", who) == "no"


def test_a_watching_install_writes_no_config_map_in_its_own_namespace(
    kube_bed: kube.KubeBed, served: tuple[str, str, str]
) -> None:
    who, namespace, pools = served
    expected = "yes" if namespace == pools else "no"
    assert can_i(kube_bed, "create", "configmaps", namespace, who) == expected
    # The Kafka cluster's execution Lease is taken in the release's namespace (k8s/lease.py).
    assert can_i(kube_bed, "create", "leases.coordination.k8s.io", namespace, who) == "yes"
    assert can_i(kube_bed, "update", "leases.coordination.k8s.io", namespace, who) == "yes"


@pytest.mark.parametrize(
    ("verb", "resource"),
    [
        *((verb, "configmaps") for verb in ("get", "create", "update", "delete")),
        *((verb, "leases.coordination.k8s.io") for verb in ("get", "create", "update")),
        ("watch", "brokerpools.kafkabalancer.io"),
        ("patch", "brokerpools.kafkabalancer.io"),
        ("patch", "brokerpools.kafkabalancer.io/status"),
        ("watch", "balancergoals.kafkabalancer.io"),
        ("create", "events"),
        ("watch", "kopfpeerings.kopf.dev"),
        ("patch", "kopfpeerings.kopf.dev/PEERING"),
    ],
)
def test_the_operator_still_may_do_its_work_in_the_pools_namespace(
    kube_bed: kube.KubeBed, served: tuple[str, str, str], verb: str, resource: str
) -> None:
    who, _, pools = served
    release = who.rsplit(":", 1)[1].removesuffix("-kafka-balancer")
    assert can_i(kube_bed, verb, resource.replace("PEERING", release), pools, who) == "yes"


def _of_kind(docs: list[dict[str, Any]], kind: str, suffix: str = "") -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]


def test_the_network_policy_admits_only_probes_metrics_and_the_webhook_and_reaches_only_what_it_needs(
    kube_bed: kube.KubeBed,
) -> None:
    assert _of_kind(render(kube_bed), "NetworkPolicy") == [], "off by default"
    docs = render(
        kube_bed,
        *NETWORK_POLICY,
        "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring",
        "networkPolicy.extraEgress[0].to[0].ipBlock.cidr=10.2.0.5/32",
        "networkPolicy.extraEgress[0].ports[0].port=9091",
    )
    (policy,) = _of_kind(docs, "NetworkPolicy")
    (deployment,) = _of_kind(docs, "Deployment")
    spec = policy["spec"]

    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert spec["podSelector"]["matchLabels"].items() <= pod_labels.items(), "it selects the operator's pod"
    assert sorted(spec["policyTypes"]) == ["Egress", "Ingress"]
    probes, metrics, webhook = spec["ingress"]
    assert probes == {"ports": [{"port": 8080, "protocol": "TCP"}]}, "the kubelet's probes, from anywhere"
    assert webhook == {"ports": [{"port": 9443, "protocol": "TCP"}]}, "the apiserver, from where it is"
    assert metrics["ports"] == [{"port": 9090, "protocol": "TCP"}]
    assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"team": "monitoring"}}}]
    api, dns, kafka, prometheus = spec["egress"]
    assert api == {
        "to": [{"ipBlock": {"cidr": "10.0.0.10/32"}}],
        "ports": [{"port": 6443, "protocol": "TCP"}],
    }
    assert dns["to"] == [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}]
    assert sorted(p["protocol"] for p in dns["ports"] if p["port"] == 53) == ["TCP", "UDP"]
    assert kafka == {
        "to": [{"ipBlock": {"cidr": "10.1.0.0/16"}}],
        "ports": [{"port": 9092, "protocol": "TCP"}],
    }
    assert prometheus == {"to": [{"ipBlock": {"cidr": "10.2.0.5/32"}}], "ports": [{"port": 9091}]}

    # Without metrics or the webhook not their ports; without Kafka peers its ports to anywhere; DNS
    # can be left out.
    (bare,) = _of_kind(
        render(
            kube_bed,
            "networkPolicy.enabled=true",
            "networkPolicy.apiServer.cidrs={10.0.0.10/32}",
            "networkPolicy.dns=false",
            "metrics.enabled=false",
            "webhook.enabled=false",
        ),
        "NetworkPolicy",
    )
    assert [rule["ports"][0]["port"] for rule in bare["spec"]["ingress"]] == [8080]
    assert bare["spec"]["egress"][1:] == [{"ports": [{"port": 9092, "protocol": "TCP"}]}]


def test_a_network_policy_without_the_apiservers_address_is_refused_naming_it(kube_bed: kube.KubeBed) -> None:
    refused = kube_bed.helm(
        "template", RELEASE, str(CHART), "--kube-version", KUBE_VERSION, "--set", "networkPolicy.enabled=true"
    )
    assert refused.returncode != 0
    assert "networkPolicy.apiServer.cidrs: give the kube-apiserver's addresses" in refused.stderr, (
        refused.stderr
    )


def test_the_dashboard_and_the_alert_rules_are_off_by_default(kube_bed: kube.KubeBed) -> None:
    docs = render(kube_bed)

    assert _of_kind(docs, "PrometheusRule") == []
    assert _of_kind(docs, "ConfigMap", "-dashboard") == []


def test_the_dashboard_config_map_carries_the_json_for_grafanas_sidecar(kube_bed: kube.KubeBed) -> None:
    (default,) = _of_kind(render(kube_bed, "dashboards.enabled=true"), "ConfigMap", "-dashboard")
    (relabelled,) = _of_kind(
        render(
            kube_bed,
            "dashboards.enabled=true",
            "dashboards.label=team_dashboard",
            "dashboards.labelValue=kafka",
            "dashboards.namespace=monitoring",
        ),
        "ConfigMap",
        "-dashboard",
    )

    shipped = json.loads((CHART / "dashboards" / "kafka-balancer.json").read_text())
    assert json.loads(default["data"]["kafka-balancer.json"]) == shipped
    assert default["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert default["metadata"]["namespace"] == RELEASE_NAMESPACE
    assert relabelled["metadata"]["labels"]["team_dashboard"] == "kafka"
    assert "grafana_dashboard" not in relabelled["metadata"]["labels"]
    assert relabelled["metadata"]["namespace"] == "monitoring"


def test_the_prometheus_rule_is_the_rules_file_with_the_values_thresholds(kube_bed: kube.KubeBed) -> None:
    shipped = yaml.safe_load((CHART / "alerts" / "rules.yaml").read_text())
    (default,) = _of_kind(render(kube_bed, "alerts.enabled=true"), "PrometheusRule")
    (tuned,) = _of_kind(
        render(
            kube_bed,
            "alerts.enabled=true",
            "alerts.rules.KafkaBalancerPoolUnbalanced.for=1h",
            "alerts.rules.KafkaBalancerMoveStuck.severity=critical",
            "alerts.labels.team=kafka",
            "alerts.ruleLabels.release=prometheus",
        ),
        "PrometheusRule",
    )

    assert default["apiVersion"] == "monitoring.coreos.com/v1"
    assert default["spec"]["groups"] == shipped["groups"], "values.yaml's alerts.rules equal the file's"
    rules = {r["alert"]: r for group in tuned["spec"]["groups"] for r in group["rules"]}
    assert rules["KafkaBalancerPoolUnbalanced"]["for"] == "1h"
    assert rules["KafkaBalancerMoveStuck"]["labels"]["severity"] == "critical"
    assert all(r["labels"]["team"] == "kafka" for r in rules.values())
    assert rules["KafkaBalancerExecutionFailed"]["labels"]["severity"] == "critical"
    assert tuned["metadata"]["labels"]["release"] == "prometheus"
    unchanged = {r["alert"]: r["expr"] for group in shipped["groups"] for r in group["rules"]}
    assert {name: r["expr"] for name, r in rules.items()} == unchanged


def test_the_chart_renders_as_a_dependency_of_an_umbrella_chart_with_globals(
    kube_bed: kube.KubeBed, tmp_path: Path
) -> None:
    """Platform teams install operators as subcharts; Helm then hands every subchart the umbrella's
    ``global`` values, which a schema closed at its root would refuse."""
    umbrella = tmp_path / "platform"
    umbrella.mkdir()
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    dependency = {"name": chart["name"], "version": chart["version"], "repository": f"file://{CHART}"}
    (umbrella / "Chart.yaml").write_text(
        yaml.safe_dump(
            {"apiVersion": "v2", "name": "platform", "version": "1.0.0", "dependencies": [dependency]}
        )
    )
    (umbrella / "values.yaml").write_text(
        yaml.safe_dump(
            {"global": {"imageRegistry": "registry.example"}, "kafka-balancer": {"replicaCount": 2}}
        )
    )
    built = kube_bed.helm("dependency", "build", str(umbrella))
    assert built.returncode == 0, built.stdout + built.stderr

    rendered = kube_bed.helm(
        "template", "platform", str(umbrella), "-n", RELEASE_NAMESPACE, "--kube-version", KUBE_VERSION
    )

    assert rendered.returncode == 0, rendered.stderr
    docs = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    deployment = next(doc for doc in docs if doc["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 2, "the umbrella's values reach the subchart"
    # The subchart's own values are still checked there.
    misspelt = ("--set", "kafka-balancer.replicas=2")
    refused = kube_bed.helm("template", "platform", str(umbrella), "--kube-version", KUBE_VERSION, *misspelt)
    assert refused.returncode != 0 and "additional properties 'replicas' not allowed" in refused.stderr


def test_the_user_roles_are_extended_to_pools_and_goals_unless_turned_off(kube_bed: kube.KubeBed) -> None:
    roles = {
        doc["metadata"]["name"]: doc
        for doc in render(kube_bed)
        if doc["kind"] == "ClusterRole"
        and "rbac.authorization.k8s.io/aggregate-to-edit" in doc["metadata"]["labels"]
    }
    prefix = f"{RELEASE}-kafka-balancer-{RELEASE_NAMESPACE}"
    view, edit = roles[f"{prefix}-view"], roles[f"{prefix}-edit"]
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert "rbac.authorization.k8s.io/aggregate-to-view" not in edit["metadata"]["labels"]
    assert {verb for rule in view["rules"] for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert "patch" in {verb for rule in edit["rules"] for verb in rule["verbs"]}  # approving a plan

    off = render(kube_bed, "aggregateToUserRoles=false")
    assert not [doc for doc in off if "aggregate-to-edit" in str(doc["metadata"].get("labels", {}))]


def test_two_releases_of_one_name_in_two_namespaces_install_side_by_side(kube_bed: kube.KubeBed) -> None:
    """One operator per team, each `helm install kafka-balancer -n <team> --set crds.enabled=false`
    beside the CRDs' owner (here the session's kubectl): every cluster-scoped object is named with its
    release's namespace, so the second install claims nothing of the first's (Helm refuses an object
    another release owns)."""
    teams = ("kb-team-x", "kb-team-y")
    installed = []
    apply_crds(kube_bed)
    try:
        for team in teams:
            kube_bed.kubectl("create", "namespace", team)
            done = kube_bed.helm(
                "install", "kafka-balancer", str(CHART), "-n", team, *BESIDE_ANOTHER_RELEASE, *NO_HOOK_JOBS
            )
            assert done.returncode == 0, done.stdout + done.stderr
            installed.append(team)
        for team in teams:
            for kind, name in (
                ("clusterrole", f"kafka-balancer-{team}-observer"),
                ("clusterrolebinding", f"kafka-balancer-{team}-observer"),
                ("clusterrole", f"kafka-balancer-{team}-view"),
                ("clusterrole", f"kafka-balancer-{team}-edit"),
                (VWC, f"kafka-balancer-{team}-scale-down"),
            ):
                got = get_json(kube_bed, kind, name)
                assert got["metadata"]["annotations"]["meta.helm.sh/release-namespace"] == team, (kind, name)
    finally:
        for team in installed:
            kube_bed.helm("uninstall", "kafka-balancer", "-n", team)
        for team in teams:
            kube_bed.kubectl("delete", "namespace", team, "--wait=false")


def _webhook_objects(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The scale-down webhook's Secret, Service and configuration, and the operator's container."""
    (secret,) = _of_kind(docs, "Secret", "-webhook-tls")
    (service,) = _of_kind(docs, "Service", "-webhook")
    (configuration,) = _of_kind(docs, "ValidatingWebhookConfiguration")
    (deployment,) = _of_kind(docs, "Deployment")
    return secret, service, configuration, deployment


def test_the_scale_down_webhook_is_wired_from_the_apiserver_to_the_operator(kube_bed: kube.KubeBed) -> None:
    secret, service, configuration, deployment = _webhook_objects(render(kube_bed))
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    env = {var["name"]: var.get("value") for var in container["env"]}
    (webhook,) = configuration["webhooks"]

    # The apiserver calls the Service, which reaches the container's webhook port, where it listens.
    assert webhook["clientConfig"]["service"] == {
        "name": service["metadata"]["name"],
        "namespace": RELEASE_NAMESPACE,
        "path": "/scale-down",
        "port": 443,
    }
    assert service["spec"]["ports"] == [{"name": "webhook", "port": 443, "targetPort": "webhook"}]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert {"name": "webhook", "containerPort": 9443} in container["ports"]
    assert env["KAFKA_BALANCER_WEBHOOK_PORT"] == "9443"
    # The configuration the operator scopes is this one.
    assert env["KAFKA_BALANCER_WEBHOOK_CONFIGURATION"] == configuration["metadata"]["name"] == WEBHOOK
    # Its certificate from the Secret, read-only; the apiserver trusts its CA.
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "webhook-tls"]
    assert mount == {
        "name": "webhook-tls",
        "mountPath": env["KAFKA_BALANCER_WEBHOOK_CERT_DIR"],
        "readOnly": True,
    }
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "webhook-tls"]
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    assert {item["path"] for item in volume["secret"]["items"]} == {"tls.crt", "tls.key"}
    assert webhook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    # A new certificate restarts the operator (it reads it once, at start).
    assert pod["metadata"]["annotations"]["kafkabalancer.io/webhook-tls-sha256"] == (
        hashlib.sha256(secret["data"]["tls.crt"].encode()).hexdigest()
    )
    # What the operator expects: StatefulSets and their scale, on update, matching nothing until it
    # scopes them, refused when it cannot be asked.
    assert webhook["rules"] == [
        {
            "apiGroups": ["apps"],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            "resources": ["statefulsets", "statefulsets/scale"],
        }
    ]
    assert webhook["matchConditions"] == [
        {"name": "kafka-balancer-pools-stateful-sets", "expression": "false"}
    ]
    assert (webhook["failurePolicy"], webhook["timeoutSeconds"]) == ("Fail", 30)
    assert webhook["sideEffects"] == "NoneOnDryRun"

    tuned = _webhook_objects(
        render(kube_bed, "webhook.failurePolicy=Ignore", "webhook.timeoutSeconds=12", "webhook.port=8443")
    )
    (tuned_webhook,) = tuned[2]["webhooks"]
    assert (tuned_webhook["failurePolicy"], tuned_webhook["timeoutSeconds"]) == ("Ignore", 12)
    assert {"name": "webhook", "containerPort": 8443} in tuned[3]["spec"]["template"]["spec"]["containers"][
        0
    ]["ports"]


def test_the_webhooks_certificate_is_valid_for_the_services_name_under_its_ca(kube_bed: kube.KubeBed) -> None:
    secret, service, _, _ = _webhook_objects(render(kube_bed))
    data = {key: base64.b64decode(value) for key, value in secret["data"].items()}
    name = f"{service['metadata']['name']}.{RELEASE_NAMESPACE}.svc"

    # What the apiserver does: TLS to the Service's DNS name, trusting the caBundle only.
    assert handshake(data, name) is None
    assert handshake(data, f"{name}.cluster.local") is None
    assert "Hostname mismatch" in str(handshake(data, f"someone-else.{RELEASE_NAMESPACE}.svc"))


def handshake(data: dict[str, bytes], hostname: str) -> ssl.SSLError | None:
    """A TLS handshake with a server of ``data``'s tls.crt/tls.key, trusting its ca.crt: the error."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as certs:
        for key in ("tls.crt", "tls.key"):
            Path(certs, key).write_bytes(data[key])
        server.load_cert_chain(Path(certs, "tls.crt"), Path(certs, "tls.key"))
    client = ssl.create_default_context(cadata=data["ca.crt"].decode())
    ours, theirs = socket.socketpair()
    ours.settimeout(10)
    theirs.settimeout(10)

    def serve() -> None:
        try:
            server.wrap_socket(theirs, server_side=True).close()
        except (ssl.SSLError, OSError):
            theirs.close()  # the client refused the certificate

    serving = threading.Thread(target=serve)
    serving.start()
    try:
        client.wrap_socket(ours, server_hostname=hostname).close()
        return None
    except ssl.SSLError as err:
        return err
    finally:
        ours.close()
        serving.join()


def test_nothing_of_the_webhook_is_rendered_when_it_is_turned_off(kube_bed: kube.KubeBed) -> None:
    for values in ((), ("clusterWide=true",)):
        docs = render(kube_bed, "webhook.enabled=false", *values)

        assert not [d for d in docs if "webhook" in d["metadata"]["name"]]
        assert _of_kind(docs, "ValidatingWebhookConfiguration") == []
        assert "webhook" not in json.dumps(_of_kind(docs, "Deployment")).lower()
        assert "admissionregistration.k8s.io" not in json.dumps(_of_kind(docs, "ClusterRole"))


def test_helm_upgrade_keeps_the_webhooks_certificate_and_the_operators_scope(
    kube_bed: kube.KubeBed, installed: None
) -> None:
    def secret() -> dict[str, str]:
        return dict(
            get_json(kube_bed, "secret", "kb-kafka-balancer-webhook-tls", "-n", RELEASE_NAMESPACE)["data"]
        )

    def webhook() -> dict[str, Any]:
        (found,) = get_json(kube_bed, VWC, WEBHOOK)["webhooks"]
        return dict(found)

    before = secret()
    assert webhook()["clientConfig"]["caBundle"] == before["ca.crt"]
    # What the operator does once it has pools (k8s/scale_guard.py): its own matchConditions.
    scoped = [{"name": "kafka-balancer-pools-stateful-sets", "expression": "object.metadata.name == 'kafka'"}]
    patched = kube_bed.kubectl(
        "patch", VWC, WEBHOOK, "--type=json",
        "-p", json.dumps([{"op": "replace", "path": "/webhooks/0/matchConditions", "value": scoped}]),
    )  # fmt: skip
    assert patched.returncode == 0, patched.stderr

    upgraded = kube_bed.helm(
        "upgrade", RELEASE, str(CHART), "-n", RELEASE_NAMESPACE, "--reuse-values",
        "--set", "webhook.failurePolicy=Ignore",
    )  # fmt: skip

    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    assert secret() == before, "the certificate the operator serves is kept"
    after = webhook()
    assert after["clientConfig"]["caBundle"] == before["ca.crt"]
    assert after["matchConditions"] == scoped, "an upgrade leaves the pools' StatefulSets guarded"
    assert after["failurePolicy"] == "Ignore"


def get_json(bed: kube.KubeBed, *args: str) -> dict[str, Any]:
    got = bed.kubectl("get", *args, "-o", "json")
    assert got.returncode == 0, got.stderr
    return dict(json.loads(got.stdout))


def test_the_handover_hooks_run_as_the_operator_on_the_namespaces_it_serves(kube_bed: kube.KubeBed) -> None:
    """What lets `helm uninstall` leave no pool on the operator's finalizer (docs/install.md#uninstalling):
    the hook Jobs reach exactly the pools the operator serves, with its rights."""

    def jobs(*values: str) -> dict[str, dict[str, Any]]:
        found = _of_kind(render(kube_bed, *values), "Job")
        return {job["metadata"]["annotations"]["helm.sh/hook"]: job for job in found}

    served = jobs("watchNamespaces={team-a,team-b}")
    assert set(served) == {"pre-delete", "post-install"}
    for hook, action in (("pre-delete", "release"), ("post-install", "resume")):
        pod = served[hook]["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert pod["serviceAccountName"] == f"{RELEASE}-kafka-balancer"
        assert container["command"] == ["python3", "-m", "kafka_balancer.k8s.handover"]
        assert container["args"] == [action, "--namespace=team-a", "--namespace=team-b", "--timeout=240"]
        # Not selected by the operator's Service, PodDisruptionBudget or NetworkPolicy.
        assert "app.kubernetes.io/name" not in served[hook]["spec"]["template"]["metadata"]["labels"]
    everywhere = jobs("clusterWide=true", "handover.timeoutSeconds=600")
    assert everywhere["pre-delete"]["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "release",
        "--all-namespaces",
        "--timeout=600",
    ]
    assert jobs(*NO_HOOK_JOBS[1:]) == {}
