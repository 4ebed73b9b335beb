"""A real Prometheus server on loopback that scrapes the Kafka bed's JMX exporters.

Each broker's target carries ``pod="bed-kafka-<id>"``, so the Prometheus source's defaults (label
``pod``, id at the end of its value) find the broker ids as they do on a Strimzi cluster. Other jobs
(the operator's own metrics endpoint, for the dashboard's test) are scraped as they are. Given
``https`` material, it serves its API over TLS only (its web config), as a secured one would.
"""

from __future__ import annotations

import json
import ssl
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.ports import LOOPBACK, answers_ok, free_port
from kafka_balancer_dev.localbed.procs import ManagedProcess, wait_until
from kafka_balancer_dev.localbed.tls_material import HttpsMaterial

JOB = "kafka"
POD_PREFIX = "bed-kafka-"
STOP_GRACE_S = 20.0


class PrometheusBed:
    """Prometheus scraping ``targets`` (broker id → ``host:port``) and ``jobs`` (job name → ``host:port``
    targets) every ``scrape_interval_s``, and what ``scrape_configs`` (Prometheus' own, as given) find:
    ``discovered`` targets in all."""

    def __init__(
        self,
        binary_dir: Path,
        run_dir: Path,
        targets: Mapping[int, str],
        *,
        scrape_interval_s: int = 1,
        start_timeout_s: float = 60.0,
        https: HttpsMaterial | None = None,
        jobs: Mapping[str, Sequence[str]] | None = None,
        scrape_configs: Sequence[Mapping[str, object]] = (),
        discovered: int = 0,
    ) -> None:
        self.binary = binary_dir / "prometheus"
        if not self.binary.is_file():
            raise BedError(f"no prometheus binary in {binary_dir} (run hack/prometheus/provision.sh)")
        self.jobs = {job: list(found) for job, found in (jobs or {}).items()}
        self.scrape_configs = list(scrape_configs)
        self.discovered = discovered
        if not targets and not any(self.jobs.values()) and not discovered:
            raise BedError("a Prometheus bed needs at least one target (start the Kafka bed with metrics)")
        self.run_dir = run_dir.resolve()
        self.targets = dict(targets)
        self.scrape_interval_s = scrape_interval_s
        self.start_timeout_s = start_timeout_s
        self.https = https
        self.port = 0
        self._process: ManagedProcess | None = None
        self._context = ssl.create_default_context(cafile=str(https.ca_pem)) if https else None

    @property
    def url(self) -> str:
        return f"{'https' if self.https else 'http'}://{LOOPBACK}:{self.port}"

    def start(self) -> None:
        """Start Prometheus; return once every target has been scraped successfully."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        config = self.run_dir / "prometheus.yml"
        config.write_text(json.dumps(self._config(), indent=2))  # YAML is a superset of JSON
        self.port = free_port()
        argv = [
            str(self.binary),
            f"--config.file={config}",
            f"--storage.tsdb.path={self.run_dir / 'data'}",
            f"--web.listen-address={LOOPBACK}:{self.port}",
        ]
        if self.https is not None:
            web = self.run_dir / "web.yml"
            served = {"cert_file": str(self.https.cert_pem), "key_file": str(self.https.key_pem)}
            web.write_text(json.dumps({"tls_server_config": served}))
            argv.append(f"--web.config.file={web}")
        self._process = ManagedProcess("prometheus", argv, self.run_dir / "prometheus.log")
        try:
            wait_until(self._ready, timeout_s=self.start_timeout_s, what=f"Prometheus ready at {self.url}")
            wait_until(
                self._all_targets_up,
                timeout_s=self.start_timeout_s,
                what=f"Prometheus to scrape its targets (log {self._process.log_path})",
            )
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop(STOP_GRACE_S)
            self._process = None

    def query(self, promql: str) -> list[dict[str, object]]:
        """The instant vector of ``promql`` now (for tests and the bed's own readiness check)."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(url, timeout=5, context=self._context) as response:
            answer = json.load(response)
        result: list[dict[str, object]] = answer["data"]["result"]
        return result

    def _config(self) -> dict[str, object]:
        every = f"{self.scrape_interval_s}s"
        return {
            "global": {"scrape_interval": every, "evaluation_interval": every},
            "scrape_configs": [
                {
                    "job_name": JOB,
                    "static_configs": [
                        {"targets": [target], "labels": {"pod": f"{POD_PREFIX}{broker}"}}
                        for broker, target in sorted(self.targets.items())
                    ],
                },
                *(
                    {"job_name": job, "static_configs": [{"targets": found}]}
                    for job, found in sorted(self.jobs.items())
                ),
                *self.scrape_configs,
            ],
        }

    def _ready(self) -> bool:
        assert self._process is not None
        self._process.ensure_running()
        return answers_ok(f"{self.url}/-/ready", context=self._context)

    def _all_targets_up(self) -> bool:
        assert self._process is not None
        self._process.ensure_running()
        up = self.query("up == 1")
        expected = len(self.targets) + sum(len(found) for found in self.jobs.values()) + self.discovered
        return len(up) == expected
