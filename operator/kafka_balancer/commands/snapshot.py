"""``kafka-balancer snapshot``: sample a cluster through the Admin API for a window, write the snapshot.

Capacities come from ``--capacity-file`` (JSON: ``{"default": {capacity}, "brokers": [{"id": 1,
"capacity": {capacity}}]}``, either part optional; a capacity is the snapshot's
``{"disk", "networkIn", "networkOut", "cpu"}``) or from the three ``--*-capacity`` flags, the same
for every broker (``--network-capacity`` is both networkIn and networkOut).

Log dirs (``logDirs``) are read once, at the end: where each replica is now, from DescribeLogDirs.

Broker cpu comes from Prometheus when ``--prometheus-url`` (or ``--prometheus-config``) is given;
without it every partition's cpu is 0 (the Admin API measures no cpu).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafka_balancer.commands.progress_display import ProgressDisplay, progress_display
from kafka_balancer.errors import InputError
from kafka_balancer.formats.errors import one_line
from kafka_balancer.formats.plan_file import write_json_atomically
from kafka_balancer.formats.snapshot import CapacityIn, load_json, parse_snapshot
from kafka_balancer.kafka.admin import KafkaAdmin, LogDirState, check_connection, load_properties
from kafka_balancer.kafka.collector import AdminReader, Collector, PassResult, total_requests
from kafka_balancer.kafka.log_dir_snapshot import add_log_dirs
from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer.kafka.snapshot_builder import Capacities, Capacity, build_snapshot
from kafka_balancer.prometheus.source import PrometheusSource
from kafka_balancer.prometheus.spec import PrometheusFile, read_prometheus_file
from kafka_balancer.samples.usage_check import comparison_lines, measured_usage, modelled_network

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


class _BrokerCapacity(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    id: int = Field(ge=0)
    capacity: CapacityIn


class _CapacityFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    default: CapacityIn | None = None
    brokers: list[_BrokerCapacity] = []


def duration_ms(flag: str, text: str) -> int:
    """``500ms``, ``10s``, ``5m``, ``1h`` or bare seconds → milliseconds (positive)."""
    found = _DURATION.match(text.strip())
    if found is None:
        raise InputError(f"{flag} {text!r}: not a duration (e.g. 10s, 5m, 500ms)")
    ms = int(float(found.group(1)) * _UNIT_MS[found.group(2) or "s"])
    if ms <= 0:
        raise InputError(f"{flag} {text!r}: must be positive")
    return ms


def _as_tuple(cap: CapacityIn) -> Capacity:
    return (cap.disk, cap.network_in, cap.network_out, cap.cpu)


def read_capacity_file(path: Path) -> Capacities:
    try:
        parsed = _CapacityFile.model_validate(load_json(path, "capacity file"))
    except ValidationError as exc:
        raise InputError(one_line(exc, f"capacity file {path.name}")) from None
    per_broker = {b.id: _as_tuple(b.capacity) for b in parsed.brokers}
    return Capacities(per_broker, _as_tuple(parsed.default) if parsed.default else None)


def capacities(args: argparse.Namespace) -> Capacities:
    flags = {
        "--disk-capacity": args.disk_capacity,
        "--network-capacity": args.network_capacity,
        "--cpu-capacity": args.cpu_capacity,
    }
    given = [name for name, value in flags.items() if value is not None]
    if args.capacity_file is not None:
        if given:
            raise InputError(f"--capacity-file and {given[0]} exclude each other")
        return read_capacity_file(args.capacity_file)
    if len(given) != len(flags):
        missing = [name for name in flags if name not in given]
        raise InputError(f"give --capacity-file, or all of {', '.join(flags)} (missing {missing[0]})")
    values = []
    for name, value in flags.items():
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"{name} {value}: must be a positive number")
        values.append(float(value))
    disk, network, cpu = values
    return Capacities({}, (disk, network, network, cpu))


def prometheus_source(args: argparse.Namespace) -> PrometheusSource | None:
    """The optional broker cpu/network source the flags ask for (None when they ask for none)."""
    if args.prometheus_url is None and args.prometheus_config is None:
        return None
    spec = read_prometheus_file(args.prometheus_config) if args.prometheus_config else PrometheusFile()
    return PrometheusSource(spec.resolve(args.prometheus_url))


def _progress(passes: int, caps: Capacities, display: ProgressDisplay) -> Callable[[int, PassResult], None]:
    def show(i: int, result: PassResult) -> None:
        obs = result.observation
        for broker in obs.brokers:
            # Fail at the first pass, not after a whole window, when a broker has no capacity.
            caps.of(broker.id)
        usage = ""
        if result.usage_error is not None:
            usage = f"; broker cpu/network unknown this pass: {result.usage_error}"
        elif result.usage:
            cores = sum(u.cpu for u in result.usage.values() if u.cpu is not None)
            usage = f"; Prometheus: {cores:.2f} core(s) used by {len(result.usage)} broker(s)"
        counts = f"{len(obs.partitions)} partition(s), {len(obs.brokers)} broker(s)"
        display.update(i + 1, status=counts)
        if display.on_terminal and result.usage_error is None:
            return  # the bar says it; a failed Prometheus query is still said in a line
        display.line(
            f"pass {i + 1}/{passes}: {counts}, "
            f"{result.samples_written} sample(s) stored, {sum(obs.requests.values())} admin request(s)"
            f"{usage}"
        )

    return show


def _log_dirs(
    bootstrap: str, props: dict[str, str], document: dict[str, Any]
) -> dict[int, tuple[LogDirState, ...]]:
    """Where each replica is now (not sampled: a log dir is a place, not a rate)."""
    admin = KafkaAdmin(bootstrap, props)
    try:
        return admin.log_dirs(b["id"] for b in document["brokers"])
    finally:
        admin.close()


def run_snapshot(args: argparse.Namespace) -> int:
    if args.output.is_file():
        # No output file on failure: a stale snapshot must not be taken for this run's.
        args.output.unlink()
    window_ms = duration_ms("--window", args.window)
    interval_ms = duration_ms("--interval", args.interval)
    if interval_ms > window_ms:
        raise InputError(f"--interval {args.interval} is longer than --window {args.window}")
    caps = capacities(args)
    props = load_properties(args.command_config) if args.command_config else {}
    usage_source = prometheus_source(args)
    brokers = check_connection(args.bootstrap_server, props)
    passes = math.ceil(window_ms / interval_ms) + 1
    with tempfile.TemporaryDirectory(prefix="kafka-balancer-samples-") as scratch:
        store = SampleStore(args.store if args.store is not None else Path(scratch))
        reader = AdminReader(args.bootstrap_server, props)
        try:
            if usage_source is not None:
                # A wrong url, label or query fails now, not as a window of unknown cpu.
                usage_source.check(int(time.time() * 1000), interval_ms, brokers)
            collector = Collector(reader, store, usage_source=usage_source)
            with progress_display(sys.stderr, "sampling", passes) as display:
                results = collector.run(
                    passes, interval_ms / 1000.0, on_pass=_progress(passes, caps, display)
                )
        finally:
            reader.close()
            if usage_source is not None:
                usage_source.close()
        last = results[-1].observation
        since = last.ts_ms - window_ms
        broker_samples = store.broker_samples(since)
        document = build_snapshot(
            last.brokers, caps, store.partition_samples(since), broker_samples, window_ms
        )
    document, no_log_dirs = add_log_dirs(document, _log_dirs(args.bootstrap_server, props, document))
    if no_log_dirs is not None:
        print(f"snapshot: without logDirs: {no_log_dirs}", file=sys.stderr)
    cluster = parse_snapshot(document, "collected snapshot")
    if usage_source is not None:
        lines = comparison_lines(measured_usage(broker_samples), modelled_network(cluster))
        print("\n".join(["measured by Prometheus against the Admin API's model:", *lines]), file=sys.stderr)
    write_json_atomically(args.output, document)
    requests: Counter[str] = total_requests(results)
    per_pass = sum(requests.values()) / passes
    by_api = ", ".join(f"{api} {n / passes:.1f}" for api, n in sorted(requests.items()))
    print(
        f"snapshot: {len(document['brokers'])} broker(s), {len(document['partitions'])} partition(s) "
        f"from {passes} pass(es) over {window_ms / 1000:.0f} s; {per_pass:.1f} admin request(s) per pass "
        f"({by_api})",
        file=sys.stderr,
    )
    return 0
