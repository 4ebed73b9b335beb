"""The operator image on a real node: pods run it under the chart's restricted security context, and
``helm install`` of the chart with the image built here gives a Ready operator."""

from __future__ import annotations

import json

from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.ports import answers_ok
from kafka_balancer_dev.localbed.procs import wait_until

from .conftest import OPERATOR_NAMESPACE, RELEASE, kubectl_json

# The chart's pod and container security context: what the operator pod runs under.
RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


def test_a_pod_runs_the_operator_image_non_root(
    node_bed: node.NodeBed, operator_image: node.LocalImage
) -> None:
    namespace = "kb-node-pod"
    node_bed.kubectl("create", "namespace", namespace)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "help", "namespace": namespace},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": RESTRICTED_POD,
            "containers": [
                {
                    "name": "operator",
                    "image": operator_image.name,
                    # Never: the image must come from the archive loaded into the node, not a registry.
                    "imagePullPolicy": "Never",
                    "args": ["--help"],
                    "securityContext": RESTRICTED_CONTAINER,
                }
            ],
        },
    }
    created = node_bed.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
    assert created.returncode == 0, created.stderr

    def finished() -> str | None:
        phase: str = kubectl_json(node_bed, "get", "pod", "help", "-n", namespace)["status"].get("phase", "")
        return phase if phase in ("Succeeded", "Failed") else None

    phase = wait_until(finished, timeout_s=120, what="the pod to finish")
    logs = node_bed.kubectl("logs", "help", "-n", namespace)
    assert phase == "Succeeded", logs.stdout + logs.stderr
    assert "usage: kafka-balancer" in logs.stdout
    status = kubectl_json(node_bed, "get", "pod", "help", "-n", namespace)["status"]["containerStatuses"][0]
    assert status["state"]["terminated"]["exitCode"] == 0
    assert status["imageID"], "the container ran no image"


def test_helm_install_gives_a_ready_operator_on_its_own_service_account(
    node_bed: node.NodeBed, operator_image: node.LocalImage, operator_release: float
) -> None:
    deployment = f"{RELEASE}-kafka-balancer"
    print(f"helm install to operator Ready: {operator_release:.1f}s")

    (pod,) = kubectl_json(
        node_bed, "get", "pods", "-n", OPERATOR_NAMESPACE, "-l", "app.kubernetes.io/name=kafka-balancer"
    )["items"]
    assert pod["spec"]["containers"][0]["image"] == operator_image.name
    # The chart's ServiceAccount and RBAC, not an admin token.
    assert pod["spec"]["serviceAccountName"] == deployment
    (status,) = pod["status"]["containerStatuses"]
    assert status["ready"] is True
    # The operator reached the apiserver from the pod (Service, kube-proxy, the projected token and CA):
    # it registered in the chart's peering object under its pod name.
    peering = kubectl_json(node_bed, "get", "clusterkopfpeering", "kafka-balancer")
    assert any(pod["metadata"]["name"] in peer for peer in peering.get("status", {})), peering
    # kopf's liveness endpoint answers on the pod's address, where kubelet's probes go.
    assert answers_ok(f"http://{pod['status']['podIP']}:8080/healthz")
    logs = node_bed.kubectl("logs", "-n", OPERATOR_NAMESPACE, pod["metadata"]["name"])
    assert "Traceback" not in logs.stdout, logs.stdout[-4000:]
    # The chart's RBAC as the apiserver enforces it: kopf warns when it may not read or watch something
    # ("Not enough permissions ... will not be noticed") and a refused call shows as
    # APIForbiddenError(..., status=403). Not a bare "403": a CI run failed on "(264037 bytes)".
    for refused in ("permission", "status=403", "forbidden"):
        assert refused not in logs.stdout.lower(), logs.stdout[-4000:]


def test_a_namespace_editor_may_read_and_approve_pools_and_a_viewer_only_read(
    node_bed: node.NodeBed, operator_release: float
) -> None:
    """The chart's ClusterRoles reach Kubernetes' own view and edit roles through the controller
    manager's aggregation: no role of ours is bound to these users."""
    namespace = "kb-node-users"
    node_bed.kubectl("create", "namespace", namespace)
    for user, role in (("alice", "edit"), ("bob", "view")):
        bound = node_bed.kubectl(
            "create",
            "rolebinding",
            f"{user}-{role}",
            f"--clusterrole={role}",
            f"--user={user}",
            "-n",
            namespace,
        )
        assert bound.returncode == 0, bound.stderr

    def may(user: str, verb: str) -> bool:
        answer = node_bed.kubectl(
            "auth", "can-i", verb, "brokerpools.kafkabalancer.io", "-n", namespace, "--as", user
        )
        return answer.stdout.strip() == "yes"

    # Aggregation is the controller manager's: it follows the install within moments.
    wait_until(
        lambda: may("alice", "patch") and may("bob", "get"), timeout_s=60, what="the roles' aggregation"
    )
    listed = node_bed.kubectl("get", "bp,bg", "-n", namespace, "--as", "alice")
    assert listed.returncode == 0, listed.stderr
    assert may("alice", "create") and may("alice", "delete")
    assert not may("bob", "patch") and not may("bob", "create")
    refused = node_bed.kubectl("get", "bp", "-n", "default", "--as", "alice")
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), "only where alice is an editor"
