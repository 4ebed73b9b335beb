"""SparkOnKubernetes with ``launcher: SparkApplication`` against the real kube-apiserver of the test
bed, with a stand-in for the Kubeflow Spark Operator: what is proven is the manifest against the CRD's
schema on the real apiserver and the engine's handling of the status the stand-in writes.

No Spark Operator controller or kubelet runs on the bed, so ``SparkOperatorStandIn`` (tests/support)
plays the controller: it runs the real job with local Spark and patches the SparkApplication's status.
The scorer under test only talks to the apiserver and the shared storage.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from tests.support.scoring_inputs import NO_GOALS, STEP, store_with_history, topology
from tests.support.spark_operator_standin import SparkOperatorStandIn

from kafka_balancer.api import Scoring
from kafka_balancer.errors import ScoringError
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.spark_application import (
    SPARK_GROUP,
    SPARK_PLURAL,
    SPARK_VERSION,
    SparkApplicationScorer,
    input_config_map,
)
from kafka_balancer.k8s.spark_runs import SparkSettings, application_name
from kafka_balancer.scoring.launch import ScoringRequest, ScoringResult
from kafka_balancer_dev.localbed import kube

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "tests" / "fixtures" / "sparkapplications.sparkoperator.k8s.io.yaml"
NAMESPACE = "kb-test-spark"
POOL = "main"


@pytest.fixture(scope="module")
def api(kube_bed: kube.KubeBed) -> Iterator[dict[str, Any]]:
    """CRDs (ours and the SparkApplication fixture), a namespace and a BrokerPool to own the runs."""
    for path in (ROOT / "crds", CRD):
        applied = kube_bed.kubectl("apply", "--server-side", "-f", str(path))
        assert applied.returncode == 0, applied.stderr
    for crd in ("brokerpools.kafkabalancer.io", "sparkapplications.sparkoperator.k8s.io"):
        kube.wait_established(kube_bed, crd)
    assert kube_bed.kubectl("create", "namespace", NAMESPACE).returncode == 0
    pool = {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BrokerPool",
        "metadata": {"name": POOL, "namespace": NAMESPACE},
        "spec": {
            "kafka": {"bootstrapServers": "kafka-0.kafka:9092"},
            "capacity": {"disk": "1T", "networkIn": "100M", "networkOut": "100M", "cpu": "8"},
            "scoring": {"engine": "SparkOnKubernetes", "image": "example/kafka-balancer-spark:1"},
        },
    }
    created = kube_bed.kubectl("create", "-o", "json", "-f", "-", stdin=json.dumps(pool))
    assert created.returncode == 0, created.stderr
    yield json.loads(created.stdout)
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


@pytest.fixture(scope="module")
def standin(
    kube_bed: kube.KubeBed, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkOperatorStandIn]:
    controller = SparkOperatorStandIn(kube_bed.kubeconfig, tmp_path_factory.mktemp("standin"))
    controller.start()
    yield controller
    controller.stop()
    assert controller.errors == []


@pytest.fixture(scope="module")
def scorer(kube_bed: kube.KubeBed, tmp_path_factory: pytest.TempPathFactory) -> SparkApplicationScorer:
    job = find_spec("kafka_balancer.scoring.job")
    assert job is not None and job.origin is not None
    settings = SparkSettings(
        storage=str(tmp_path_factory.mktemp("shared-storage")),  # a volume driver and operator share
        main_application_file=f"local://{job.origin}",
        ttl_seconds=600,
        timeout_s=1800.0,
        poll_s=0.5,
    )
    return SparkApplicationScorer(Kube(str(kube_bed.kubeconfig)), settings)


def request(pool: dict[str, Any], samples: Path, run: str) -> ScoringRequest:
    return ScoringRequest(
        namespace=NAMESPACE,
        pool=POOL,
        pool_uid=pool["metadata"]["uid"],
        run=run,
        samples=samples,
        topology=topology(),
        goals=NO_GOALS,
        window_ms=STEP,
        windows=2,
        spec=Scoring.model_validate(pool["spec"]["scoring"]),
    )


class StateRecorder:
    """The states of one SparkApplication as the apiserver's watch reports them."""

    def __init__(self, kubeconfig: Path, name: str) -> None:
        api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
        self.custom = client.CustomObjectsApi(api)
        self.name = name
        self.states: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StateRecorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        # Short watches resumed from the last resourceVersion: a run can outlast any one watch.
        version = None
        while not self._stop.is_set():
            for event in watch.Watch().stream(  # type: ignore[no-untyped-call]
                self.custom.list_namespaced_custom_object,
                SPARK_GROUP,
                SPARK_VERSION,
                NAMESPACE,
                SPARK_PLURAL,
                field_selector=f"metadata.name={self.name}",
                resource_version=version,
                timeout_seconds=2,
            ):
                version = event["object"]["metadata"]["resourceVersion"]
                state = ((event["object"].get("status") or {}).get("applicationState") or {}).get("state")
                if state and (not self.states or self.states[-1] != state):
                    self.states.append(state)


def get_app(scorer: SparkApplicationScorer, name: str) -> Any:
    return scorer.kube.read_custom_object(SPARK_GROUP, SPARK_VERSION, SPARK_PLURAL, NAMESPACE, name)


@dataclass(frozen=True)
class Completed:
    request: ScoringRequest
    result: ScoringResult
    states: list[str]


@pytest.fixture(scope="module")
def completed(
    kube_bed: kube.KubeBed,
    api: dict[str, Any],
    standin: SparkOperatorStandIn,
    scorer: SparkApplicationScorer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Completed:
    """One real run, through the apiserver, the stand-in and local Spark (minutes on a loaded machine)."""
    store = store_with_history(tmp_path_factory.mktemp("samples") / "store")
    run = request(api, store.root, "run-ok")
    with StateRecorder(kube_bed.kubeconfig, application_name(NAMESPACE, POOL, "run-ok")) as recorder:
        result = scorer.score(run)
        deadline = time.monotonic() + 10
        while recorder.states[-1:] != ["COMPLETED"] and time.monotonic() < deadline:
            time.sleep(0.1)
    print(
        f"\nSparkApplication run: {result.seconds:.1f} s submit to outputs read, "
        f"job {result.manifest['durationSeconds']} s"
    )
    return Completed(run, result, list(recorder.states))


def test_standin_a_run_is_a_sparkapplication_the_standin_completes_and_its_outputs_are_read(
    api: dict[str, Any], scorer: SparkApplicationScorer, completed: Completed
) -> None:
    assert completed.states == ["SUBMITTED", "RUNNING", "COMPLETED"]
    result = completed.result
    assert result.manifest["rows"]["partitions"] == 6
    assert result.manifest["windows"]["used"] == 2
    loads = {(p["topic"], p["partition"]): p["load"] for p in result.snapshot["partitions"]}
    assert loads[("orders", 0)]["networkIn"] > 5 * loads[("orders", 1)]["networkIn"]

    name = application_name(NAMESPACE, POOL, "run-ok")
    app = get_app(scorer, name)
    assert app["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kafkabalancer.io/v1alpha1",
            "kind": "BrokerPool",
            "name": POOL,
            "uid": api["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": False,
        }
    ]
    spec = app["spec"]
    assert spec["restartPolicy"] == {"type": "Never"}
    assert spec["timeToLiveSeconds"] == 600
    assert spec["image"] == "example/kafka-balancer-spark:1"
    assert spec["arguments"][spec["arguments"].index("--windows") + 1] == "2"
    # The inputs ConfigMap is gone once the run is over.
    assert scorer.kube.read_config_map(NAMESPACE, input_config_map(name)) is None


def test_standin_a_rerun_of_the_same_run_reuses_the_application(
    standin: SparkOperatorStandIn, scorer: SparkApplicationScorer, completed: Completed
) -> None:
    again = scorer.score(completed.request)

    name = application_name(NAMESPACE, POOL, "run-ok")
    assert standin.runs[f"{NAMESPACE}/{name}"] == 1
    assert again.snapshot == completed.result.snapshot
    assert isinstance(scorer.kube, Kube)
    listed: Any = scorer.kube.custom.list_namespaced_custom_object(
        SPARK_GROUP,
        SPARK_VERSION,
        NAMESPACE,
        SPARK_PLURAL,
        label_selector="kafkabalancer.io/scoring-run=run-ok",
    )
    assert [a["metadata"]["name"] for a in listed["items"]] == [name]


def test_standin_a_failed_driver_surfaces_as_a_scoring_error_with_its_message(
    api: dict[str, Any], standin: SparkOperatorStandIn, scorer: SparkApplicationScorer, tmp_path: Path
) -> None:
    empty = tmp_path / "no-samples-yet"
    empty.mkdir()
    with pytest.raises(ScoringError) as raised:
        scorer.score(request(api, empty, "run-fails"))
    name = application_name(NAMESPACE, POOL, "run-fails")
    state = get_app(scorer, name)["status"]["applicationState"]
    assert state["state"] == "FAILED"
    # The job's own line; its directory may be missing or (after an earlier run's upload) emptied.
    assert re.match(
        r"score: bad input: samples \S+/kb-test-spark\.main: no partition[_ ]samples", state["errorMessage"]
    )
    assert f"SparkApplication {NAMESPACE}/{name} FAILED" in str(raised.value)
    assert state["errorMessage"] in str(raised.value)
