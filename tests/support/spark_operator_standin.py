"""TEST STAND-IN for the Kubeflow Spark Operator's controller (and the kubelet that would run its driver).

The test bed has a real kube-apiserver but no Spark Operator, no kubelet and no pods. This stand-in
watches SparkApplications on that apiserver and does what the real controller's effect on the API is:
it patches ``status.applicationState`` SUBMITTED → RUNNING → COMPLETED or FAILED, and in between runs
the application for real, with the ``spark-submit`` that ships with pyspark, on ``local[2]`` instead of
``k8s://``. The driver's ConfigMap volumes (``spec.driver.configMaps``) are "mounted" by writing the
ConfigMap's keys into a local directory and rewriting arguments under the mount path to point there.
A failed run's ``errorMessage`` is the driver's last error line (its log's ``score: …`` line).

The operator side never knows about this module: it talks only to the apiserver.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kafka_balancer.scoring.launch import error_line

GROUP, VERSION, PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
POLL_S = 0.3
RUN_TIMEOUT_S = 1500.0


def spark_submit() -> Path:
    import pyspark  # the stand-in's Spark distribution is pyspark's own

    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class SparkOperatorStandIn:
    """Start with :meth:`start`, stop with :meth:`stop` (kills a running driver by its pid)."""

    def __init__(self, kubeconfig: Path, work_dir: Path) -> None:
        api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.work_dir = work_dir
        self.runs: Counter[str] = Counter()  # namespace/name → times the driver was run
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="spark-operator-standin", daemon=True)
        self._driver: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        driver = self._driver
        if driver is not None and driver.poll() is None:
            driver.kill()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                listed: Any = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
                for app in listed.get("items", []):
                    if not ((app.get("status") or {}).get("applicationState") or {}).get("state"):
                        self._run(app)
            except Exception as err:  # a stand-in must keep serving; the test sees what went wrong
                self.errors.append(f"{type(err).__name__}: {err}")
            self._stop.wait(POLL_S)

    def _patch(self, namespace: str, name: str, state: str, **extra: Any) -> None:
        status = {"applicationState": {"state": state, **extra.pop("app_state", {})}, **extra}
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, name, {"status": status}
        )

    def _run(self, app: dict[str, Any]) -> None:
        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        spec = app["spec"]
        self._patch(
            namespace,
            name,
            "SUBMITTED",
            submissionID=str(uuid.uuid4()),
            lastSubmissionAttemptTime=now(),
            executionAttempts=1,
        )
        run_dir = self.work_dir / namespace / name
        try:
            arguments = self._mount(namespace, spec, run_dir)
        except ApiException as err:
            self._patch(namespace, name, "FAILED", app_state={"errorMessage": f"mounting: {err.reason}"})
            return
        self._patch(namespace, name, "RUNNING")
        self.runs[f"{namespace}/{name}"] += 1
        argv = [str(spark_submit()), "--master", "local[2]", "--name", name]
        for key, value in sorted((spec.get("sparkConf") or {}).items()):
            argv += ["--conf", f"{key}={value}"]
        argv += [str(spec["mainApplicationFile"]).removeprefix("local://"), *arguments]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        self._driver = subprocess.Popen(
            # One stream, as a container log: spark-submit relays the Python driver's stderr to stdout.
            argv,
            env=env,
            cwd=run_dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            output, _ = self._driver.communicate(timeout=RUN_TIMEOUT_S)
            message = error_line(output)
        except subprocess.TimeoutExpired:
            self._driver.kill()
            output, _ = self._driver.communicate()
            message = f"driver killed after {RUN_TIMEOUT_S:.0f} s"
        code = self._driver.returncode
        self._driver = None
        (run_dir / "driver.log").write_text(output)
        if code == 0:
            self._patch(namespace, name, "COMPLETED", terminationTime=now())
        else:
            self._patch(namespace, name, "FAILED", terminationTime=now(), app_state={"errorMessage": message})

    def _mount(self, namespace: str, spec: dict[str, Any], run_dir: Path) -> list[str]:
        """The kubelet's part: ConfigMap volumes as local files; arguments follow the mount paths."""
        arguments = [str(a) for a in spec.get("arguments") or []]
        for index, volume in enumerate((spec.get("driver") or {}).get("configMaps") or []):
            local = run_dir / "mounts" / str(index)
            local.mkdir(parents=True, exist_ok=True)
            found = self.core.read_namespaced_config_map(volume["name"], namespace)
            for key, value in (found.data or {}).items():
                (local / key).write_text(value)
            mount = str(volume["path"]).rstrip("/")
            arguments = [str(local) + a[len(mount) :] if a.startswith(mount + "/") else a for a in arguments]
        return arguments
