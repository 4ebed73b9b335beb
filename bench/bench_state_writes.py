"""Execution state benchmark: what one step of a large execution writes to the Kubernetes API.

    .venv/bin/python bench/bench_state_writes.py [--moves 275000] [--batch 50] [--steps 6]

Starts a private Kubernetes API bed (etcd + kube-apiserver), builds an execution state of --moves
moves (50 partitions a topic, replication factor 3 over 300 brokers, one replica moved each) and
mirrors it through the operator's own ``StateMirror`` into ``<pool>-execution``, as an execution
does: once whole at its start, then per step. A step is one batch of --batch moves in plan order,
submitted (in flight) and then completed (done): each is an essential change, written before the
Kafka write it announces. Bytes written: the sum of the data and binaryData of every ConfigMap
created or replaced, what the apiserver stores. etcd growth: ``etcd_mvcc_db_total_size_in_bytes``
from etcd's /metrics before the first write and after the last (the apiserver compacts every 5
minutes; a run is shorter, so every revision written is still there).

One JSON line: the first write, then the medians over the steps of bytes and ConfigMaps written,
wall and CPU seconds of this process per step, the etcd growth, and the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.settings import Timings
from kafka_balancer.k8s.state_mirror import StateMirror
from kafka_balancer.kafka.execution_state import ExecutionState, Move, MoveStatus
from kafka_balancer_dev.localbed import kube

NAMESPACE = "bench-state"
POOL = PoolId(NAMESPACE, "main", "0b1c9a52-5a53-4c4e-9d1c-0000000bench")


class CountingKube(Kube):
    """The operator's Kubernetes client, counting what it writes into ConfigMaps."""

    def __init__(self, kubeconfig: str) -> None:
        super().__init__(kubeconfig)
        self.bytes = 0
        self.config_maps = 0

    def _count(self, data: Mapping[str, str], binary: Mapping[str, bytes] | None) -> None:
        self.bytes += sum(len(k) + len(v.encode()) for k, v in data.items())
        self.bytes += sum(len(k) + len(v) for k, v in (binary or {}).items())
        self.config_maps += 1

    def write_config_map(
        self,
        namespace: str,
        name: str,
        owner: PoolId,
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None = None,
    ) -> None:
        self._count(data, binary)
        super().write_config_map(namespace, name, owner, data, binary)

    def write_config_map_if(
        self,
        namespace: str,
        name: str,
        owner: PoolId,
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None,
        version: str | None,
    ) -> str:
        self._count(data, binary)
        return super().write_config_map_if(namespace, name, owner, data, binary, version)


def big_state(moves: int, seed: int = 11) -> ExecutionState:
    rng = random.Random(seed)
    built = []
    for i in range(moves):
        source = tuple(rng.sample(range(1, 301), 3))
        newcomer = rng.choice([b for b in range(1, 301) if b not in source])
        target = (newcomer, *source[1:])
        size = rng.randint(10**8, 10**10)
        built.append(Move(f"topic-{i // 50:05d}", i % 50, source, target, size))
    return ExecutionState(tuple(built), created_at=1.7e9, updated_at=1.7e9, throttle_rate=50 * 2**20)


def stepped(state: ExecutionState, first: int, batch: int, status: MoveStatus, now: float) -> ExecutionState:
    moves = list(state.moves)
    for i in range(first, min(first + batch, len(moves))):
        m = moves[i]
        if status is MoveStatus.IN_FLIGHT:
            moves[i] = replace(m, status=status, started_at=now)
        else:
            moves[i] = replace(m, status=status, finished_at=now, progress_bytes=m.size, progress_at=now)
    return replace(state, moves=tuple(moves), updated_at=now)


def etcd_db_bytes(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith("etcd_mvcc_db_total_size_in_bytes "):
                return int(float(line.split()[1]))
    raise RuntimeError("etcd's /metrics has no etcd_mvcc_db_total_size_in_bytes")


def measure(client: CountingKube, bed: kube.KubeBed, moves: int, batch: int, steps: int) -> dict[str, Any]:
    state = big_state(moves)
    mirror = StateMirror(client, POOL, timings=Timings(mirror_every_s=0.0))
    etcd_before = etcd_db_bytes(bed.etcd_port)
    started, cpu = time.perf_counter(), time.process_time()
    mirror.write("plan-1", state, force=True)
    first = {
        "bytes": client.bytes,
        "config_maps": client.config_maps,
        "wall_s": round(time.perf_counter() - started, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
    }
    per_step: list[dict[str, float]] = []
    for step in range(steps):
        for status in (MoveStatus.IN_FLIGHT, MoveStatus.DONE):
            state = stepped(state, step * batch, batch, status, 1.7e9 + step)
            client.bytes = client.config_maps = 0
            started, cpu = time.perf_counter(), time.process_time()
            assert mirror.write("plan-1", state)
            per_step.append(
                {
                    "bytes": client.bytes,
                    "config_maps": client.config_maps,
                    "wall_s": time.perf_counter() - started,
                    "cpu_s": time.process_time() - cpu,
                }
            )
    etcd_after = etcd_db_bytes(bed.etcd_port)
    resumed = StateMirror(client, POOL).load()
    assert resumed is not None and resumed[1] == state, "the state read back differs from the one written"
    return {
        "moves": moves,
        "batch": batch,
        "writes": len(per_step),
        "first_write": first,
        "step_bytes_median": statistics.median(s["bytes"] for s in per_step),
        "step_config_maps_median": statistics.median(s["config_maps"] for s in per_step),
        "step_wall_s_median": round(statistics.median(s["wall_s"] for s in per_step), 3),
        "step_cpu_s_median": round(statistics.median(s["cpu_s"] for s in per_step), 3),
        "etcd_db_growth_bytes": etcd_after - etcd_before,
        "etcd_db_bytes_after": etcd_after,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--moves", type=int, default=275_000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--steps", type=int, default=6, help="steps of submit + complete, 2 writes each")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-state-") as work:
        bed = kube.KubeBed(kube.provision(), Path(work))
        bed.start()
        try:
            created = bed.kubectl("create", "namespace", NAMESPACE)
            if created.returncode != 0:
                raise RuntimeError(created.stderr)
            client = CountingKube(str(bed.kubeconfig))
            print(json.dumps(measure(client, bed, args.moves, args.batch, args.steps)))
        finally:
            bed.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
