"""The chart's RBAC as the real apiserver enforces it on the chart's ServiceAccount.

``kubectl auth can-i`` (test_chart.py) says what a rule grants; here the operator process itself runs
with nothing but a token of that ServiceAccount (the TokenRequest API, as a pod's projected token), so
any request the chart forgot is refused for real and shows in its log, and a Secret outside
``kafka.secretNamespaces`` is really unreadable.
"""

from __future__ import annotations

import json
import re
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.e2e.conftest import OperatorProcess, wait_for
from tests.e2e.objects import apply, condition, events, get, goal, pool
from tests.e2e.test_lifecycle import (
    BALANCE_TIMEOUT_S,
    GOALS,
    assert_clean,
    rack_aware,
    replica_counts,
)
from tests.fixtures.kube_bed import running_kube_bed
from tests.support.chart import BESIDE_ANOTHER_RELEASE, CHART, NO_HOOK_JOBS, apply_crds
from tests.support.kafka_checks import create_topic, delete_topic

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.ports import free_ports
from kafka_balancer_dev.localbed.procs import wait_until

# A refused request in the operator's log: kopf logs each 403 it retries ("... -> APIForbiddenError(
# ..., {... 'reason': 'Forbidden', 'code': 403}, status=403)") and then warns "Not enough permissions
# to watch for resources: changes (creation/deletion/updates) will not be noticed; ..."
# (kopf/_core/reactor/observation.py), or "Not enough RBAC permissions to create a ..."
# (kopf/_core/engines/admission.py); the kubernetes client's ApiException says "(403)". Never a bare
# 403: CI failed on a lease line whose timestamp's milliseconds were ",403".
REFUSED = re.compile(r"status=403|'code': 403|\(403\)|Forbidden|Not enough (RBAC )?permissions")
SECRET = "kafka-credentials"


@dataclass(frozen=True)
class Release:
    """One helm install of the chart: its release and namespace, where its pools live, its values."""

    name: str
    namespace: str
    pools: str
    secrets: str
    watch_namespaces: bool

    @property
    def service_account(self) -> str:
        return f"{self.name}-kafka-balancer"

    @property
    def values(self) -> list[str]:
        # Each release its own peering object: neither install owns the other's.
        values = [f"peering={self.namespace}", f"kafka.secretNamespaces={{{self.secrets}}}"]
        if not self.watch_namespaces:
            return [*values, "clusterWide=true"]
        # Pools in the release's own namespace: the chart's default, nothing to set.
        return values if self.pools == self.namespace else [*values, f"watchNamespaces={{{self.pools}}}"]

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.namespace, self.pools, self.secrets)))


CLUSTER_WIDE = Release("kbrc", "kb-rbac-cluster", "kb-rbac-cluster-pools", "kb-rbac-cluster-secrets", False)
NAMESPACED = Release("kbrn", "kb-rbac-ns", "kb-rbac-ns-pools", "kb-rbac-ns-secrets", True)
DEFAULTS = Release("kbrd", "kb-rbac-default", "kb-rbac-default", "kb-rbac-default-secrets", True)


@dataclass(frozen=True)
class Installed:
    release: Release
    token: str
    kubeconfig: Path


@pytest.fixture(scope="module")
def own_api(
    kube_binaries: kube.KubeBinaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[kube.KubeBed]:
    """An apiserver no other operator watches: the e2e tier's operator (admin, every namespace) runs
    on the session's bed for the whole session, and two operators on one pool race for its ConfigMaps."""
    yield from running_kube_bed(kube_binaries, tmp_path_factory.mktemp("kube-rbac"))


@pytest.fixture(
    scope="module",
    params=[CLUSTER_WIDE, NAMESPACED, DEFAULTS],
    ids=["cluster-wide", "watchNamespaces", "defaults"],
)
def installed(own_api: kube.KubeBed, request: pytest.FixtureRequest) -> Iterator[Installed]:
    release: Release = request.param
    for namespace in release.namespaces:
        created = own_api.kubectl("create", "namespace", namespace)
        assert created.returncode == 0, created.stderr
    # Each parameter a release of its own, none of them the CRDs' owner.
    apply_crds(own_api)
    done = own_api.helm(
        "install", release.name, str(CHART), "-n", release.namespace,
        *(arg for value in release.values for arg in ("--set", value)),
        *BESIDE_ANOTHER_RELEASE, *NO_HOOK_JOBS,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        for crd in ("brokerpools.kafkabalancer.io", "balancergoals.kafkabalancer.io"):
            kube.wait_established(own_api, crd)
        # What a pod's projected token is: a short-lived token of the ServiceAccount, nothing more.
        token = own_api.kubectl(
            "create", "token", release.service_account, "-n", release.namespace, "--duration=1h"
        )
        assert token.returncode == 0, token.stderr
        # The apiserver authorizes from a cache of the RBAC objects: the operator starts once the
        # bindings helm just made are in it, so any refusal it meets is the chart's doing.
        account = f"system:serviceaccount:{release.namespace}:{release.service_account}"
        wait_until(
            lambda: (
                own_api.kubectl(
                    "auth",
                    "can-i",
                    "watch",
                    "brokerpools.kafkabalancer.io",
                    "-n",
                    release.pools,
                    "--as",
                    account,
                ).stdout.strip()
                == "yes"
            ),
            timeout_s=30,
            what=f"the chart's RBAC to be in force for {account}",
        )
        kubeconfig = own_api.kubeconfig_with_token(release.service_account, token.stdout.strip())
        yield Installed(release, token.stdout.strip(), kubeconfig)
    finally:
        own_api.helm("uninstall", release.name, "-n", release.namespace)
        for namespace in release.namespaces:
            own_api.kubectl("delete", "namespace", namespace, "--wait=false")


def operator_as(installed: Installed, run_dir: Path) -> OperatorProcess:
    """The operator process as the chart's Deployment runs it, logged in with the ServiceAccount's token."""
    release = installed.release
    port, metrics_port = free_ports(2)
    argv = [
        str(Path(sys.executable).with_name("kafka-balancer")),
        "run",
        "--kubeconfig", str(installed.kubeconfig),
        "--peering", release.namespace,
        "--state-dir", str(run_dir / "state"),
        "--liveness", f"http://127.0.0.1:{port}/healthz",
        "--metrics-port", str(metrics_port),
        # As the chart's Deployment sets KAFKA_BALANCER_NAMESPACE: the release's namespace.
        "--lease-namespace", release.namespace,
        *([f"--namespace={release.pools}"] if release.watch_namespaces else []),
    ]  # fmt: skip
    run_dir.mkdir(parents=True, exist_ok=True)
    return OperatorProcess(
        argv,
        run_dir / "operator.log",
        f"http://127.0.0.1:{port}/healthz",
        f"http://127.0.0.1:{metrics_port}/",
    )


def test_the_operator_on_the_charts_service_account_is_never_refused(
    own_api: kube.KubeBed, kafka_bed: KafkaBed, installed: Installed, tmp_path: Path
) -> None:
    namespace = installed.release.pools
    # 8 partitions, RF 2, all on brokers 1 and 2: an Auto pool must plan and execute moves.
    topic = create_topic(kafka_bed, "rbac", [[1, 2] if p % 2 else [2, 1] for p in range(8)])
    operator = operator_as(installed, tmp_path)
    operator.start()
    try:
        apply(
            own_api,
            namespace,
            pool("main", kafka_bed.bootstrap_servers, "Auto", topic),
            *(goal(name, "main", **g) for name, g in GOALS),
        )

        # The operator's whole job: the pool read and patched, its plan and execution ConfigMaps, the
        # execution's Lease, Events, the goals' status, and its plan executed, as with the admin's token.
        # Not "Balanced": the shared Kafka bed holds the other tests' topics, which count in the replica
        # distribution and can keep it out of band whatever this topic does (seen in CI). A refusal ends
        # the wait at once: an operator refused its Lease would otherwise wait it out.
        wait_for(
            lambda: refused(operator) or executed(own_api, namespace),
            BALANCE_TIMEOUT_S,
            "the pool's plan to be executed",
            operator,
        )
        assert refused(operator) == [], "\n".join(refused(operator))
        assert get(own_api, namespace, "configmap", "main-plan")["data"]["plan.id"]
        assert {"PlanReady", "ExecutionStarted"} <= {e["reason"] for e in events(own_api, namespace)}
        # Taken for the execution and handed back (its holder cleared) once it finished, which may
        # come just after the status says Balanced; so may the goals' status.
        wait_for(
            lambda: "holderIdentity" not in get(own_api, namespace, "lease", "main-execution")["spec"],
            30,
            "the execution's Lease to be handed back",
            operator,
        )
        # Whether the goal holds depends on the shared bed's other topics too: that its status was
        # written at all is what the permission is for (this topic's rack awareness is checked below).
        wait_for(
            lambda: (
                condition(get(own_api, namespace, "bg", "racks"), "Satisfied").get("status")
                in ("True", "False")
            ),
            30,
            "the racks goal's Satisfied condition",
            operator,
        )
        # Moves were made (the shared bed's other topics count in the distribution, so not how many).
        counts = replica_counts(kafka_bed, topic)
        assert counts[3] + counts[4] > 0, counts
        assert rack_aware(kafka_bed, topic)
        assert_clean(kafka_bed, topic)
        # This process did it.
        assert f"pool {namespace}/main reconciled" in operator.log.read_text(), operator.tail()
    finally:
        own_api.kubectl("delete", "brokerpools,balancergoals", "--all", "-n", namespace, "--timeout=60s")
        operator.stop()
        delete_topic(kafka_bed, topic)
    # Nor while the pool was deleted (its finalizer) and the operator stopped.
    assert refused(operator) == [], "\n".join(refused(operator))


def executed(api: kube.KubeBed, namespace: str) -> bool:
    """The pool's current plan was executed to its end."""
    status = get(api, namespace, "bp", "main").get("status", {})
    return bool(status.get("execution", {}).get("phase") == "Succeeded")


def refused(operator: OperatorProcess) -> list[str]:
    """The lines of the operator's log that show a request refused for want of a permission."""
    return [line for line in operator.log.read_text().splitlines() if REFUSED.search(line)]


def test_secrets_are_readable_only_in_the_secret_namespaces(
    own_api: kube.KubeBed, installed: Installed
) -> None:
    release = installed.release
    for namespace in release.namespaces:
        created = own_api.kubectl(
            "create", "secret", "generic", SECRET, "-n", namespace, "--from-literal=password=s3cret"
        )
        assert created.returncode == 0, created.stderr

    status, body = get_as(own_api, installed.token, f"/api/v1/namespaces/{release.secrets}/secrets/{SECRET}")
    assert status == 200, body
    assert json.loads(body)["data"]["password"] == "czNjcmV0"  # base64 of s3cret
    # Not the release's own namespace once secretNamespaces is set, nor where the pools live.
    for namespace in dict.fromkeys((release.namespace, release.pools)):
        status, body = get_as(own_api, installed.token, f"/api/v1/namespaces/{namespace}/secrets/{SECRET}")
        assert status == 403, body
        assert json.loads(body)["reason"] == "Forbidden"
    # Reading one by name is all: no listing, even where reading is allowed.
    status, body = get_as(own_api, installed.token, f"/api/v1/namespaces/{release.secrets}/secrets")
    assert status == 403, body


def get_as(bed: kube.KubeBed, token: str, path: str) -> tuple[int, str]:
    """A GET of the apiserver with ``token``: (HTTP status, body)."""
    request = urllib.request.Request(bed.server + path, headers={"Authorization": f"Bearer {token}"})
    context = ssl.create_default_context(cafile=str(bed.ca_file))
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
