"""The operator image on a real node: pods run it under the chart's restricted security context, and
``helm install`` of the chart with the image built here gives a Ready operator."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.ports import answers_ok
from kafka_balancer_dev.localbed.procs import wait_until
from tests.support.scoring_inputs import NO_GOALS, STEP, store_with_history, topology

from .conftest import OPERATOR_NAMESPACE, RELEASE, kubectl_json

# The chart's pod and container security context: what the operator pod runs under.
RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
# A uid the image's /etc/passwd does not name, as OpenShift picks them (10000x0000 per namespace).
UNNAMED_UID = 1000720000
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


def run_to_the_end(
    bed: node.NodeBed, namespace: str, pod_spec: dict[str, Any]
) -> tuple[str, dict[str, Any], str]:
    """Runs a one-shot pod named ``run`` with ``pod_spec``; its phase, container status and logs."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "run", "namespace": namespace}}
    created = bed.kubectl("apply", "-f", "-", stdin=json.dumps({**pod, "spec": pod_spec}))
    assert created.returncode == 0, created.stderr

    def finished() -> str | None:
        phase: str = kubectl_json(bed, "get", "pod", "run", "-n", namespace)["status"].get("phase", "")
        return phase if phase in ("Succeeded", "Failed") else None

    phase = wait_until(finished, timeout_s=300, what="the pod to finish")
    logs = bed.kubectl("logs", "run", "-n", namespace)
    status = kubectl_json(bed, "get", "pod", "run", "-n", namespace)["status"]["containerStatuses"][0]
    return phase, status, logs.stdout + logs.stderr


def test_a_pod_runs_the_operator_image_non_root(
    node_bed: node.NodeBed, operator_image: node.LocalImage
) -> None:
    namespace = "kb-node-pod"
    node_bed.kubectl("create", "namespace", namespace)
    phase, status, logs = run_to_the_end(
        node_bed,
        namespace,
        {
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
    )
    assert phase == "Succeeded", logs
    assert "usage: kafka-balancer" in logs
    assert status["state"]["terminated"]["exitCode"] == 0
    assert status["imageID"], "the container ran no image"


def test_the_image_scores_under_a_uid_it_has_no_name_for(
    node_bed: node.NodeBed, operator_image: node.LocalImage
) -> None:
    """OpenShift's restricted-v2 runs a pod under a uid of its namespace's range, with the root group,
    which the image's /etc/passwd cannot know. Without a name for it the embedded scoring job fails:
    Java takes the user's home from it (Spark's Ivy directory becomes "?/.ivy2.5.2"), and Hadoop's
    login refuses the user ("Invalid UID, could not determine effective user")."""
    namespace = "kb-node-uid"
    node_bed.kubectl("create", "namespace", namespace)
    # Not under pytest's 0700 temporary directories: the pod's uid must reach it.
    data = Path(f"/tmp/kb-node-uid-{time.time_ns()}")
    data.mkdir(mode=0o777)
    data.chmod(0o777)
    try:
        store_with_history(data / "store")
        (data / "topology.json").write_text(json.dumps(topology()))
        (data / "goals.json").write_text(json.dumps(NO_GOALS))
        (data / "out").mkdir(mode=0o777)
        (data / "out").chmod(0o777)
        phase, status, logs = run_to_the_end(
            node_bed,
            namespace,
            {
                "restartPolicy": "Never",
                "securityContext": {
                    **RESTRICTED_POD,
                    "runAsUser": UNNAMED_UID,
                    "runAsGroup": 0,
                    "fsGroup": UNNAMED_UID,
                },
                "containers": [
                    {
                        "name": "score",
                        "image": operator_image.name,
                        "imagePullPolicy": "Never",
                        "args": [
                            "score",
                            *("--samples", "/data/store", "--topology", "/data/topology.json"),
                            *("--goals", "/data/goals.json", "--out", "/data/out", "--master", "local[1]"),
                            *("--window-ms", str(STEP), "--windows", "2"),
                        ],
                        "securityContext": RESTRICTED_CONTAINER,
                        "volumeMounts": [
                            {"name": "data", "mountPath": "/data"},
                            {"name": "tmp", "mountPath": "/tmp"},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "data", "hostPath": {"path": str(data), "type": "Directory"}},
                    {"name": "tmp", "emptyDir": {}},
                ],
            },
        )
        assert phase == "Succeeded", logs[-4000:]
        assert status["state"]["terminated"]["exitCode"] == 0
        scored = data / "out" / "snapshot.json"
        assert scored.stat().st_uid == UNNAMED_UID, "the job ran as another user"
        partitions = json.loads(scored.read_text())["partitions"]
        assert sorted((p["topic"], p["partition"]) for p in partitions) == [("orders", p) for p in range(6)]
    finally:
        node_bed.kubectl("delete", "namespace", namespace, "--wait=false")
        shutil.rmtree(data, ignore_errors=True)


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
