"""Spark pods in a namespace that enforces Pod Security "restricted", as the real kube-apiserver's
PodSecurity admission decides it.

The driver: the operator's own submission (``submit_argv`` with its pod templates, run by its
``_spark_submit``: pyspark's real spark-submit, JVM and all) against the bed, so the pod the apiserver
admits is the one Spark renders from the operator's template. The bed has no node, so the driver never
runs and never creates its executors; the executor pod here is the template spark-submit handed the
driver (read back from the ConfigMap it created) with the fields Spark's executor step adds (name,
labels, image, args, env, resources, its local-dir emptyDir), which is what a real driver submits.
The pods running on a real kubelet as this uid: tests/node/test_spark.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.api import Scoring
from kafka_balancer.k8s.spark_runs import SPARK_UID, SparkSettings
from kafka_balancer.k8s.spark_submit import (
    DRIVER_CONTAINER,
    EXECUTOR_CONTAINER,
    _spark_submit,
    driver_pod_name,
    spark_home,
    submit_argv,
    submit_error,
    write_templates,
)
from kafka_balancer.scoring.launch import ScoringRequest
from kafka_balancer.scoring.seal import TERMINATION_LOG
from kafka_balancer_dev.localbed import kube

pytestmark = pytest.mark.integration

NAMESPACE, POOL = "kb-spark-restricted", "main"
REFUSED = 'violates PodSecurity "restricted:latest"'


@pytest.fixture(scope="module")
def restricted(kube_bed: kube.KubeBed) -> Iterator[str]:
    kube_bed.kubectl("create", "namespace", NAMESPACE)
    done = kube_bed.kubectl("label", "namespace", NAMESPACE, "pod-security.kubernetes.io/enforce=restricted")
    assert done.returncode == 0, done.stderr
    yield NAMESPACE
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def request(tmp_path: Path, run: str) -> ScoringRequest:
    return ScoringRequest(
        namespace=NAMESPACE,
        pool=POOL,
        pool_uid="5d0c3f2e-0000-4000-8000-000000000001",
        run=run,
        samples=tmp_path,
        topology={"brokers": []},
        goals={"apiVersion": "v1", "kind": "List", "items": []},
        window_ms=300_000,
        windows=3,
        spec=Scoring.model_validate({"engine": "SparkOnKubernetes", "image": "kafka-balancer:test"}),
    )


def settings(bed: kube.KubeBed, storage: Path) -> SparkSettings:
    """The operator's settings, pointed at the bed: spark-submit authenticates as the bed's admin."""
    return SparkSettings(
        storage=str(storage),
        master=f"k8s://{bed.server}",
        spark_conf={
            "spark.kubernetes.authenticate.submission.caCertFile": str(bed.ca_file),
            "spark.kubernetes.authenticate.submission.oauthToken": bed.tokens[kube.ADMIN],
        },
    )


def submit(bed: kube.KubeBed, wanted: ScoringRequest, templates: Path) -> subprocess.CompletedProcess[str]:
    return _spark_submit(submit_argv(settings(bed, templates), wanted, templates, spark_home()))


def get_json(bed: kube.KubeBed, *args: str) -> Any:
    done = bed.kubectl("get", *args, "-n", NAMESPACE, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def strip_security(templates: Path) -> None:
    """The templates as they were before the security contexts: only the containers' names."""
    for name in ("driver.json", "executor.json"):
        path = templates / name
        template = json.loads(path.read_text(encoding="utf-8"))
        spec = template["spec"]
        spec.pop("securityContext")
        spec["containers"] = [{"name": c["name"]} for c in spec["containers"]]
        path.write_text(json.dumps(template), encoding="utf-8")


def executor_pod(template: dict[str, Any], driver: dict[str, Any]) -> dict[str, Any]:
    """The executor pod a driver creates: its template with Spark's executor fields added (Spark keeps
    the template container's securityContext and sets none of its own)."""
    spec = template["spec"]
    container = spec["containers"][0] | {
        "image": driver["spec"]["containers"][0]["image"],
        "args": ["executor"],
        "env": [
            {"name": "SPARK_EXECUTOR_ID", "value": "1"},
            {"name": "SPARK_EXECUTOR_MEMORY", "value": "1g"},
        ],
        "resources": {"requests": {"cpu": "1", "memory": "1408Mi"}, "limits": {"memory": "1408Mi"}},
        "volumeMounts": [{"name": "spark-local-dir-1", "mountPath": "/var/data/spark-1"}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{driver['metadata']['name'].removesuffix('-driver')}-exec-1",
            "labels": {"spark-role": "executor"},
        },
        "spec": spec
        | {
            "containers": [container],
            "restartPolicy": "Never",
            "volumes": [{"name": "spark-local-dir-1", "emptyDir": {}}],
        },
    }


def executor_template(bed: kube.KubeBed, driver: dict[str, Any]) -> dict[str, Any]:
    """The executor template as the driver reads it: from the ConfigMap spark-submit created for it
    (the one the driver pod mounts that holds a pod with Spark's executor container)."""
    mounted = {v["configMap"]["name"] for v in driver["spec"]["volumes"] if "configMap" in v}
    for config_map in get_json(bed, "configmaps")["items"]:
        if config_map["metadata"]["name"] not in mounted:
            continue
        for text in (config_map.get("data") or {}).values():
            if f'"{EXECUTOR_CONTAINER}"' in text:
                return dict(json.loads(text))
    raise AssertionError(f"no executor template among the driver's ConfigMaps {sorted(mounted)}")


def create(bed: kube.KubeBed, pod: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return bed.kubectl("create", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(pod))


def test_the_operators_spark_pods_are_admitted_by_a_restricted_namespace(
    kube_bed: kube.KubeBed, restricted: str, tmp_path: Path
) -> None:
    wanted = request(tmp_path, "0001700000000001")
    done = submit(kube_bed, wanted, write_templates(wanted, tmp_path, SPARK_UID))
    assert done.returncode == 0, submit_error(done.stderr)

    driver = get_json(kube_bed, "pod", driver_pod_name(NAMESPACE, POOL, wanted.run))
    assert driver["spec"]["securityContext"]["runAsUser"] == SPARK_UID
    for container in driver["spec"]["containers"] + driver["spec"].get("initContainers", []):
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
    # The job's --seal-file is where the kubelet takes the termination message from, in the container
    # the operator reads it from (seal.py).
    (spark,) = driver["spec"]["containers"]
    assert (spark["name"], spark["terminationMessagePath"]) == (DRIVER_CONTAINER, TERMINATION_LOG)
    assert spark["args"][spark["args"].index("--seal-file") + 1] == TERMINATION_LOG
    # Spark kept the template's ownerReference (the pool) beside what it rendered.
    assert driver["metadata"]["ownerReferences"][0]["uid"] == wanted.pool_uid

    executor = create(kube_bed, executor_pod(executor_template(kube_bed, driver), driver))
    assert executor.returncode == 0, executor.stderr


def test_the_same_pods_without_the_security_context_are_refused(
    kube_bed: kube.KubeBed, restricted: str, tmp_path: Path
) -> None:
    """The proof above proves something: without the contexts the apiserver refuses both pods, and
    the pool's status would say why."""
    wanted = request(tmp_path, "0001700000000002")
    templates = write_templates(wanted, tmp_path, SPARK_UID)
    bare_executor = json.loads((templates / "executor.json").read_text(encoding="utf-8"))
    strip_security(templates)

    done = submit(kube_bed, wanted, templates)
    assert done.returncode != 0
    reason = submit_error(done.stderr)
    assert REFUSED in reason, done.stderr[-2000:]
    # The pool's status names the reason (cut to its length); Spark's log has all of it.
    for missing in ("unrestricted capabilities", "runAsNonRoot != true", "seccompProfile"):
        assert missing in done.stderr
    name = driver_pod_name(NAMESPACE, POOL, wanted.run)
    assert kube_bed.kubectl("get", "pod", name, "-n", NAMESPACE).returncode != 0  # not created

    bare_executor["spec"].pop("securityContext")
    bare_executor["spec"]["containers"] = [{"name": EXECUTOR_CONTAINER}]
    driver_like = {"metadata": {"name": "kb-score-bare-driver"}, "spec": {"containers": [{"image": "i:1"}]}}
    refused = create(kube_bed, executor_pod(bare_executor, driver_like))
    assert refused.returncode != 0
    assert REFUSED in refused.stderr
    assert "runAsNonRoot != true" in refused.stderr
