"""Broker cpu and network from a real Prometheus scraping the brokers' JMX exporter agents.

What the source reports is checked against what the brokers really did: cpu against the kernel's
account of each broker process (/proc/<pid>/stat), network against the traffic the test produced
and consumed, replication included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest
from tests.fixtures.prometheus_bed import MetricsBeds
from tests.support.traffic import KnownTraffic, create_topic

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.prometheus_secrets import PoolSecrets, prometheus_settings
from kafka_balancer.k8s.source import ClusterSource
from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer.prometheus.settings import PrometheusSettings
from kafka_balancer.prometheus.source import PrometheusSource
from kafka_balancer.reconcile.conditions import Condition
from kafka_balancer.reconcile.observation import usage_condition
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.procs import wait_until
from kafka_balancer_dev.localbed.prometheus import PrometheusBed
from kafka_balancer_dev.localbed.tls_material import make_https_material

VALUE_BYTES = 2_000
RATE_MSGS = 100  # per second: 200 kB/s produced and consumed
RF = 3
MEASURE_S = 15.0
# The JVM's cpu is bursty (GC, JIT); Prometheus extrapolates rate() to the range's edges.
CPU_REL, CPU_ABS = 0.25, 0.03
NETWORK_REL = 0.25


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from the kernel's own account."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _broker_pids(beds: MetricsBeds) -> dict[int, int]:
    return {
        int(name.split("-")[1]): pid for name, pid in beds.kafka.pids().items() if name.startswith("broker-")
    }


def _scraped_after(beds: MetricsBeds, at_s: float) -> bool:
    """Whether every broker has been scraped after ``at_s`` (so a query at ``at_s`` sees its end)."""
    stamps = beds.prometheus.query('timestamp(up{job="kafka"})')
    return len(stamps) == len(beds.kafka.metrics_endpoints) and all(
        float(cast(list[str], s["value"])[1]) > at_s + 1 for s in stamps
    )


def test_broker_cpu_and_network_agree_with_the_kernel_and_the_traffic(metrics_beds: MetricsBeds) -> None:
    bootstrap = metrics_beds.kafka.bootstrap_servers
    topic = create_topic(bootstrap, "measured", partitions=3, rf=RF)
    pids = _broker_pids(metrics_beds)
    with KnownTraffic(bootstrap, topic, RATE_MSGS, VALUE_BYTES) as traffic:
        traffic.wait_flowing()
        start = time.time()
        before = {b: _cpu_seconds(pid) for b, pid in pids.items()}
        time.sleep(MEASURE_S)  # the measured window itself, not a wait for a condition
        end = time.time()
        after = {b: _cpu_seconds(pid) for b, pid in pids.items()}
        wait_until(lambda: _scraped_after(metrics_beds, end), timeout_s=30, what="a scrape after the window")
    assert not traffic.errors

    settings = PrometheusSettings(url=metrics_beds.prometheus.url, min_range_s=1)
    source = PrometheusSource(settings)
    try:
        usage = source.usage(int(end * 1000), int((end - start) * 1000))
    finally:
        source.close()

    assert set(usage) == set(pids)
    kernel = {b: (after[b] - before[b]) / (end - start) for b in pids}
    produced = traffic.rate(traffic.delivered, start, end)
    consumed = traffic.rate(traffic.consumed, start, end)
    measured_in = sum(u.network_in or 0.0 for u in usage.values())
    measured_out = sum(u.network_out or 0.0 for u in usage.values())
    print(
        "\ncpu cores (Prometheus / kernel): "
        + ", ".join(f"broker {b} {usage[b].cpu:.3f} / {kernel[b]:.3f}" for b in sorted(pids))
        + f"; network in {measured_in:.0f} B/s for {produced:.0f} B/s produced × RF {RF}; "
        f"network out {measured_out:.0f} B/s for {consumed:.0f} B/s consumed + replication"
    )
    for broker, cores in kernel.items():
        assert usage[broker].cpu == pytest.approx(cores, rel=CPU_REL, abs=CPU_ABS), broker
    # Every replica receives what is produced (leaders from producers, followers by replication);
    # leaders send it to the consumers and to the RF - 1 followers.
    assert measured_in == pytest.approx(produced * RF, rel=NETWORK_REL)
    assert measured_out == pytest.approx(consumed + produced * (RF - 1), rel=NETWORK_REL)


def test_snapshot_with_prometheus_gives_partitions_cpu_and_compares_measured_with_modelled(
    metrics_beds: MetricsBeds, tmp_path: Path
) -> None:
    bootstrap = metrics_beds.kafka.bootstrap_servers
    topic = create_topic(bootstrap, "snapshot", partitions=3, rf=RF)
    snapshot = tmp_path / "snapshot.json"

    def run_snapshot(label: str) -> subprocess.CompletedProcess[str]:
        config = tmp_path / "prometheus.json"
        settings = {"url": metrics_beds.prometheus.url, "minRangeSeconds": 2, "brokerLabel": label}
        config.write_text(json.dumps(settings))
        return subprocess.run(
            [
                sys.executable, "-m", "kafka_balancer.cli", "snapshot",
                "--bootstrap-server", bootstrap, "--prometheus-config", str(config),
                "--window", "8s", "--interval", "2s",
                "--disk-capacity", "1e12", "--network-capacity", "1.25e8", "--cpu-capacity", "2",
                "--store", str(tmp_path / "store"), "--output", str(snapshot),
            ],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip

    # "instance" ends in the exporter's port: refused at once, in one line, before any pass.
    refused = run_snapshot("instance")
    assert refused.returncode == 1, refused.stderr
    assert "name no broker of the cluster through label 'instance'" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not snapshot.exists(), refused.stderr

    with KnownTraffic(bootstrap, topic, RATE_MSGS, VALUE_BYTES) as traffic:
        traffic.wait_flowing()
        done = run_snapshot("pod")
    assert not traffic.errors
    assert done.returncode == 0, done.stderr
    print("\n" + done.stderr)

    measured = [
        r for r in SampleStore(tmp_path / "store").broker_samples().to_pylist() if r["cpu"] is not None
    ]
    assert {r["broker"] for r in measured} == {1, 2, 3}
    mine = [p for p in json.loads(snapshot.read_text())["partitions"] if p["topic"] == topic]
    assert len(mine) == 3
    # The brokers' measured cpu is shared over the partitions they lead and follow: none gets 0.
    assert all(p["load"]["cpu"] > 0 and p["load"]["followerCpu"] > 0 for p in mine), mine
    table = done.stderr.split("measured by Prometheus against the Admin API's model:")[1].splitlines()
    rows = {int(line.split()[0]): line.split() for line in table[2:5]}
    assert set(rows) == {1, 2, 3}
    for broker, row in rows.items():
        cores, in_measured, in_modelled = float(row[1]), float(row[2]), float(row[4])
        assert cores > 0, row
        # Each broker holds a replica of every partition, so it takes in the whole produce rate.
        assert in_measured == pytest.approx(in_modelled, rel=NETWORK_REL), (broker, row)


def test_the_operator_reads_cpu_from_the_pools_prometheus_and_says_when_the_label_is_wrong(
    metrics_beds: MetricsBeds,
) -> None:
    bootstrap = metrics_beds.kafka.bootstrap_servers
    topic = create_topic(bootstrap, "operator", partitions=3, rf=RF)
    key = "team-m/metrics"
    pool = PoolId("team-m", "metrics", "0b1c9a52-5a53-4c4e-9d1c-0000000000a1")

    def spec(label: str) -> BrokerPoolSpec:
        return BrokerPoolSpec.model_validate(
            {
                "kafka": {"bootstrapServers": bootstrap},
                "capacity": {"disk": "1T", "networkIn": "100M", "networkOut": "100M", "cpu": "2"},
                "prometheus": {
                    "url": metrics_beds.prometheus.url,
                    "brokerLabel": label,
                    "minRangeSeconds": 2,
                },
            }
        )

    source = ClusterSource()
    with KnownTraffic(bootstrap, topic, RATE_MSGS, VALUE_BYTES) as traffic:
        traffic.wait_flowing()
        source.read(pool, spec("pod"), {})
        assert usage_condition(source.usage_sources[key]).reason == "Waiting"

        def every_broker() -> tuple[Condition, Any] | None:
            # A pass whose range holds one scrape of a broker (a slow scrape) leaves it out: poll.
            _, loads = source.read(pool, spec("pod"), {})
            measured = usage_condition(source.usage_sources[key])
            assert measured.reason != "PrometheusFailed", measured
            return (measured, loads) if "3 broker(s)" in measured.message else None

        measured, loads = wait_until(every_broker, timeout_s=60, what="a pass measuring all 3 brokers")
        assert (measured.status, measured.reason) == ("True", "Prometheus"), measured
        assert all(loads[(topic, p)].cpu > 0 for p in range(3)), loads

        # "instance" ends in digits too (the exporter's port): ids that are no broker must not count.
        _, loads = source.read(pool, spec("instance"), {})
        wrong = usage_condition(source.usage_sources[key])
        assert (wrong.status, wrong.reason) == ("False", "NoBrokerSeries"), wrong
        assert "check brokerLabel" in wrong.message
        assert all(loads[(topic, p)].cpu == 0 for p in range(3))
    assert not traffic.errors


def test_the_operator_queries_an_https_prometheus_with_the_ca_and_token_of_the_pools_secret(
    metrics_beds: MetricsBeds, metrics_tools: Path, kube_bed: kube.KubeBed, tmp_path: Path
) -> None:
    bootstrap = metrics_beds.kafka.bootstrap_servers
    namespace, key = "team-tls", "team-tls/secured"
    pool = PoolId(namespace, "secured", "0b1c9a52-5a53-4c4e-9d1c-0000000000a2")
    https = make_https_material(tmp_path / "https")
    secured = PrometheusBed(
        metrics_tools, tmp_path / "prometheus", metrics_beds.kafka.metrics_endpoints, https=https
    )
    secured.start()
    # rate() over minRangeSeconds needs two samples of each broker in the range: a fresh server has one.
    brokers = len(metrics_beds.kafka.metrics_endpoints)
    wait_until(
        lambda: len(secured.query('count_over_time(up{job="kafka"}[5s]) >= 3')) == brokers,
        timeout_s=60,
        what="three scrapes of every broker by the TLS Prometheus",
    )
    created = kube_bed.kubectl("create", "namespace", namespace)
    assert created.returncode == 0, created.stderr
    try:
        secret = kube_bed.kubectl(
            "-n", namespace, "create", "secret", "generic", "prom",
            f"--from-file=ca.crt={https.ca_pem}", "--from-literal=token=s3cret",
        )  # fmt: skip
        assert secret.returncode == 0, secret.stderr
        secrets = PoolSecrets(Kube(str(kube_bed.kubeconfig)).read_secret, tmp_path / "secrets")

        def spec(**refs: Any) -> BrokerPoolSpec:
            prometheus = {"url": secured.url, "minRangeSeconds": 2, **refs}
            return BrokerPoolSpec.model_validate(
                {
                    "kafka": {"bootstrapServers": bootstrap},
                    "capacity": {"disk": "1T", "networkIn": "100M", "networkOut": "100M", "cpu": "2"},
                    "prometheus": prometheus,
                }
            )

        def measured(refs: dict[str, Any]) -> Condition | None:
            source.read(pool, spec(**refs), {})
            condition = usage_condition(source.usage_sources[key])
            return None if condition.reason == "Waiting" else condition

        source = ClusterSource(secrets=secrets)
        both = {"caSecretRef": {"name": "prom"}, "bearerTokenSecretRef": {"name": "prom"}}

        # A Secret its writer did not mean for the pool is not used: the pool says so (from its
        # second pass: the first has no interval to measure).
        refused = wait_until(lambda: measured(both), timeout_s=30, what="a pass that reads the Secret")
        assert refused.reason == "PrometheusFailed", refused
        assert "Secret team-tls/prom is not meant for this pool" in refused.message, refused.message
        annotated = kube_bed.kubectl(
            "-n", namespace, "annotate", "secret", "prom", "kafkabalancer.io/pools=secured"
        )  # fmt: skip
        assert annotated.returncode == 0, annotated.stderr

        def every_broker() -> Condition | None:
            # A pass whose range holds one scrape of a broker (a slow scrape) leaves it out: poll.
            condition = measured(both)
            assert condition is None or condition.reason != "PrometheusFailed", condition
            return condition if condition and f"{brokers} broker(s)" in condition.message else None

        answered = wait_until(every_broker, timeout_s=60, what=f"a pass measuring all {brokers} brokers")
        assert (answered.status, answered.reason) == ("True", "Prometheus"), answered
        # The token reaches the settings the source sends it with (Prometheus's own server ignores it).
        with_refs = spec(**both).prometheus
        assert with_refs is not None
        assert prometheus_settings(with_refs, pool, secrets).bearer_token == "s3cret"

        # Without the pool's CA the system's CAs do not trust the bed's certificate.
        untrusted = measured({"bearerTokenSecretRef": {"name": "prom"}})
        assert untrusted is not None and untrusted.reason == "PrometheusFailed", untrusted
        assert f"Prometheus at {secured.url}: TLS handshake failed" in untrusted.message
        missing = measured({"caSecretRef": {"name": "gone"}})
        assert (
            missing is not None
            and "prometheus.caSecretRef: Secret team-tls/gone is missing" in missing.message
        )
    finally:
        secured.stop()
        kube_bed.kubectl("delete", "namespace", namespace, "--wait=false")
