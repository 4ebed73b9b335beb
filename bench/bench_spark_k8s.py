"""Scoring through Spark on Kubernetes (the node bed) beside embedded ``local[2]`` on the same store.

    KB_VENV=.venv .venv/bin/python bench/bench_spark_k8s.py [--runs 3] [--executors 1,2] [--local-runs 3]

Needs root and the node tier's binaries (it starts the node bed of ``tests/node``; only one may run
on a machine). The sample store is the mid cluster's of ``bench_scoring.py --e2e`` (200 brokers,
40,000 partitions, 12 one-minute passes, two 5-minute windows). It is written once to a directory
the Spark pods mount as a hostPath volume; ``local[2]`` scores it in a fresh process as
``bench_scoring.py`` does, then the node starts and ``spark-submit --deploy-mode cluster`` of the
operator's own pyspark submits the scoring job's entry in the operator image, with the settings
the operator gives it (``k8s/spark_submit.py``: sizes, shuffle partitions, labels), each pod
asking 500m CPU and 1 GiB of heap. Every run's snapshot is checked against the synthetic loads.

Reported per Kubernetes run: wall time from spark-submit's start to the driver pod seen Succeeded
(polled every 0.5 s); spark-submit's own time; the pods' start overhead (driver pod created →
driver running → every executor running, from the API's timestamps, 1 s resolution); the job in
the driver (driver running → driver finished); CPU seconds of the driver's and the executors'
pods from their cgroups (``cpuacct.usage``) plus spark-submit's JVM (its rusage); the driver's
peak memory from its pod cgroup (``memory.max_usage_in_bytes``, cgroup v1: page cache included)
and the peak of its ``total_rss`` (sampled every 0.5 s); the 1-minute load average before and
after. A pod's cgroup goes with the pod: its figures are the last sampled, at most 0.5 s old.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_scoring import (
    E2E_PASSES,
    E2E_WINDOW_MS,
    E2E_WINDOWS,
    STEP_MS,
    check_loads,
    load1,
    prepare,
    run_child,
    synthetic_cluster,
)
from kafka_balancer.api import Scoring, ScoringResources
from kafka_balancer.k8s.spark_runs import SparkSettings
from kafka_balancer.k8s.spark_submit import driver_pod_name, spark_home, submit_conf, submit_env
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.scoring.launch import ScoringRequest
from kafka_balancer_dev.localbed import kube, node

NAMESPACE = "kb-bench"
SERVICE_ACCOUNT = "spark"
MOUNT = "/bench"
CGROUPS = Path("/sys/fs/cgroup")
RUN_TIMEOUT_S = 1200.0


def rbac() -> str:
    """The namespace and the driver's ServiceAccount, allowed what Spark's driver does (executor pods,
    their Service and ConfigMap)."""
    documents: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
                    "verbs": ["*"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": SERVICE_ACCOUNT},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}],
        },
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": documents})


def pod_cgroup(hierarchy: str, uid: str) -> Path | None:
    """The pod's cgroup in one v1 hierarchy (kubelet's cgroupfs layout under its cgroupRoot)."""
    root = CGROUPS / hierarchy / node.CGROUP_ROOT / "kubepods"
    for candidate in (
        root / f"pod{uid}",
        root / "burstable" / f"pod{uid}",
        root / "besteffort" / f"pod{uid}",
    ):
        if candidate.is_dir():
            return candidate
    return None


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):  # the pod's cgroup went meanwhile
        return None


def _total_rss(memory: Path) -> int | None:
    try:
        lines = (memory / "memory.stat").read_text().splitlines()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in lines if line.startswith("total_rss ")), None)


class PodSampler:
    """Every 0.5 s: the bench namespace's pods (uid → role) and, per pod, its cgroup's CPU and memory
    figures; the last values seen are kept (the cgroup goes with the pod)."""

    def __init__(self, bed: node.NodeBed) -> None:
        self.bed = bed
        self.roles: dict[str, str] = {}
        self.cpu_ns: dict[str, int] = {}
        self.max_usage: dict[str, int] = {}
        self.peak_rss: dict[str, int] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        listed_at = 0.0
        while not self._stop.is_set():
            if time.monotonic() - listed_at > 2.0:
                listed_at = time.monotonic()
                self._list()
            for uid in list(self.roles):
                cpuacct, memory = pod_cgroup("cpuacct", uid), pod_cgroup("memory", uid)
                if cpuacct is not None and (ns := _read_int(cpuacct / "cpuacct.usage")) is not None:
                    self.cpu_ns[uid] = ns
                if memory is not None:
                    if (usage := _read_int(memory / "memory.max_usage_in_bytes")) is not None:
                        self.max_usage[uid] = usage
                    if (rss := _total_rss(memory)) is not None:
                        self.peak_rss[uid] = max(rss, self.peak_rss.get(uid, 0))
            self._stop.wait(0.5)

    def _list(self) -> None:
        done = self.bed.kubectl("get", "pods", "-n", NAMESPACE, "-o", "json")
        if done.returncode != 0:
            return
        for pod in json.loads(done.stdout)["items"]:
            uid = pod["metadata"]["uid"]
            self.roles[uid] = pod["metadata"].get("labels", {}).get("spark-role", "")
            self.pods[uid] = pod

    def __enter__(self) -> PodSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def _container_times(pod: dict[str, Any]) -> tuple[float | None, float | None]:
    for status in pod["status"].get("containerStatuses") or []:
        state = status.get("state", {})
        current = state.get("running") or state.get("terminated") or {}
        started = current.get("startedAt")
        finished = state.get("terminated", {}).get("finishedAt")
        return (_at(started) if started else None), (_at(finished) if finished else None)
    return None, None


def submission(bed: node.NodeBed, image: str, work: Path, executors: int, run: str, token: Path) -> list[str]:
    """spark-submit's argv: the operator's confs for a pool of ``executors`` executors of 500m and
    1 GiB, the store on a hostPath volume, the job's flags as ``bench_scoring.py --e2e`` gives them."""
    hostpath = {
        f"spark.kubernetes.{role}.volumes.hostPath.bench.{key}": value
        for role in ("driver", "executor")
        for key, value in (("mount.path", MOUNT), ("options.path", str(work)))
    }
    settings = SparkSettings(
        storage=MOUNT, service_account=SERVICE_ACCOUNT, master=f"k8s://{bed.api.server}", spark_conf=hostpath
    )
    spec = Scoring(
        engine="SparkOnKubernetes",
        image=image,
        executors=executors,
        resources=ScoringResources(cpu="500m", memory="1Gi"),
    )
    request = ScoringRequest(NAMESPACE, "mid", "", run, work, {}, {}, E2E_WINDOW_MS, E2E_WINDOWS, spec)
    # Bare pod templates: the operator's own (spark_submit.write_templates) make the pool the driver's
    # owner, and the bench has no pool (the API's garbage collector would delete an orphan driver),
    # and run as a non-root user, which could not write the bench's root-owned hostPath store.
    templates = work / "templates"
    templates.mkdir(exist_ok=True)
    for name in ("driver", "executor"):
        bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}}
        (templates / f"{name}.json").write_text(json.dumps(bare))
    conf = submit_conf(settings, request, templates) | {
        "spark.kubernetes.authenticate.submission.caCertFile": str(bed.api.ca_file),
        "spark.kubernetes.authenticate.submission.oauthTokenFile": str(token),
    }
    return [
        str(spark_home() / "bin" / "spark-submit"),
        "--master", settings.master,
        "--deploy-mode", "cluster",
        "--name", f"kb-bench-{run}",
        *(item for key, value in conf.items() for item in ("--conf", f"{key}={value}")),
        settings.main_application_file,
        "--samples", f"{MOUNT}/store",
        "--topology", f"{MOUNT}/topology.json",
        "--goals", f"{MOUNT}/goals.yaml",
        "--out", f"{MOUNT}/out-{run}",
        "--window-ms", str(E2E_WINDOW_MS),
        "--windows", str(E2E_WINDOWS),
        "--min-samples-per-window", str(E2E_WINDOW_MS // STEP_MS),
    ]  # fmt: skip


def k8s_run(
    bed: node.NodeBed, image: str, work: Path, expected: Cluster, executors: int, index: int, token: Path
) -> dict[str, Any]:
    run = f"e{executors}-{index}"
    driver_name = driver_pod_name(NAMESPACE, "mid", run)
    argv = submission(bed, image, work, executors, run, token)
    before = load1()
    with PodSampler(bed) as sampler:
        started = time.monotonic()
        usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env=submit_env(spark_home()))
        submitted = time.monotonic() - started
        usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"spark-submit failed:\n{done.stderr[-3000:]}")
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while True:
            got = bed.kubectl("get", "pod", driver_name, "-n", NAMESPACE, "-o", "json")
            phase = json.loads(got.stdout)["status"].get("phase") if got.returncode == 0 else None
            if phase == "Succeeded":
                break
            if phase == "Failed" or time.monotonic() > deadline:
                logs = bed.kubectl("logs", driver_name, "-n", NAMESPACE, "--tail=30").stdout
                raise SystemExit(f"driver {driver_name} {phase or 'not found'}:\n{logs}")
            time.sleep(0.5)
        wall = time.monotonic() - started
        driver_pod = json.loads(got.stdout)
        time.sleep(1.0)  # one more sample of the executors' cgroups if they are still there
    driver_uid = driver_pod["metadata"]["uid"]
    executor_uids = [u for u, role in sampler.roles.items() if role == "executor"]
    created = _at(driver_pod["metadata"]["creationTimestamp"])
    driver_started, driver_finished = _container_times(driver_pod)
    executor_started = [_container_times(sampler.pods[u])[0] for u in executor_uids]
    assert driver_started is not None and driver_finished is not None
    worst = check_loads(expected, work / f"out-{run}" / "snapshot.json")
    bed.kubectl("delete", "pod", driver_name, "-n", NAMESPACE, "--wait=false")
    submit_cpu = (usage1.ru_utime + usage1.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    return {
        "master": f"k8s, {executors} executor(s)",
        "wallSeconds": round(wall, 1),
        "sparkSubmitSeconds": round(submitted, 1),
        "driverRunningAfterCreatedSeconds": driver_started - created,
        "executorsRunningAfterCreatedSeconds": max(
            (s - created for s in executor_started if s is not None), default=None
        ),
        "executorsSeen": len(executor_uids),
        "driverJobSeconds": driver_finished - driver_started,
        "driverCpuSeconds": round(sampler.cpu_ns.get(driver_uid, 0) / 1e9, 1),
        "executorsCpuSeconds": round(sum(sampler.cpu_ns.get(u, 0) for u in executor_uids) / 1e9, 1),
        "sparkSubmitCpuSeconds": round(submit_cpu, 1),
        "driverMaxUsageMiB": sampler.max_usage.get(driver_uid, 0) // 2**20,
        "driverPeakRssMiB": sampler.peak_rss.get(driver_uid, 0) // 2**20,
        "worstLoadError": worst,
        "load1Before": before,
        "load1After": load1(),
    }


def median_row(results: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k, v in results[0].items() if isinstance(v, int | float) and not isinstance(v, bool)]
    values = {k: [r[k] for r in results if r[k] is not None] for k in keys}
    return {"master": results[0]["master"], "runs": len(results)} | {
        k: statistics.median(v) if v else None for k, v in values.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="Kubernetes runs per executor count")
    parser.add_argument("--executors", default="1,2")
    parser.add_argument("--local-runs", type=int, default=3)
    args = parser.parse_args()
    # Not under a 0700 temporary directory: the pods' user (65532) reads the store and writes outputs.
    work = Path(tempfile.mkdtemp(prefix="kb-bench-spark-", dir="/tmp"))
    work.chmod(0o777)
    rows: list[dict[str, Any]] = []
    try:
        prepare(work, "mid", E2E_PASSES)
        min_samples = E2E_WINDOW_MS // STEP_MS
        local = [
            run_child(work, "mid", "local[2]", E2E_WINDOW_MS, E2E_WINDOWS, min_samples)
            for _ in range(args.local_runs)
        ]
        for result in local:
            print(json.dumps(result), flush=True)
        if local:
            rows.append(median_row(local))
        image = node.build_operator_image()
        expected = synthetic_cluster("mid")
        with node.NodeBed(
            kube.provision(), node.provision(), work / "node-bed", images=[image.archive]
        ) as bed:
            created = bed.kubectl("apply", "-f", "-", stdin=rbac())
            if created.returncode != 0:
                raise SystemExit(created.stderr)
            token = work / "node-bed" / "bench-token"
            token.write_text(bed.api.tokens[kube.ADMIN])
            token.chmod(0o600)
            for executors in (int(e) for e in args.executors.split(",")):
                results = []
                for index in range(args.runs):
                    results.append(k8s_run(bed, image.name, work, expected, executors, index, token))
                    print(json.dumps(results[-1]), flush=True)
                rows.append(median_row(results))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for row in rows:
        print(json.dumps({"median": row}), flush=True)


if __name__ == "__main__":
    main()
