"""The snapshot's logDirs from DescribeLogDirs answers: each broker's dirs with their volume's size,
each replica's dir; all or nothing, as the snapshot contract wants."""

from __future__ import annotations

from typing import Any

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.kafka.admin import LogDirState
from kafka_balancer.kafka.log_dir_snapshot import add_log_dirs
from tests.unit.clusters import broker, partition, snapshot


def _doc() -> dict[str, Any]:
    return snapshot([broker(1, "a"), broker(2, "b")], [partition("t", 0, [1, 2]), partition("t", 1, [2, 1])])


def _dir(path: str, *tps: tuple[str, int], online: bool = True, size: int | None = 500) -> LogDirState:
    return LogDirState(path, online, size, dict.fromkeys(tps, 10), {})


def test_every_broker_gets_its_dirs_and_every_replica_its_dir() -> None:
    dirs = {
        1: (_dir("/d/0", ("t", 0)), _dir("/d/1", ("t", 1), size=700)),
        2: (_dir("/d/0", ("t", 0), ("t", 1)), _dir("/d/1")),
    }
    out, why = add_log_dirs(_doc(), dirs)
    assert why is None
    assert out["brokers"][0]["logDirs"] == [
        {"path": "/d/0", "capacity": 500.0, "online": True},
        {"path": "/d/1", "capacity": 700.0, "online": True},
    ]
    assert [p["logDirs"] for p in out["partitions"]] == [["/d/0", "/d/0"], ["/d/0", "/d/1"]]
    cluster = parse_snapshot(out)
    assert cluster.partitions[1].log_dirs == ("/d/0", "/d/1")


def test_a_replica_a_broker_does_not_list_is_on_its_offline_dir() -> None:
    dirs = {
        1: (_dir("/d/0", ("t", 0)), _dir("/d/1", online=False, size=None)),
        2: (_dir("/d/0", ("t", 0), ("t", 1)), _dir("/d/1")),
    }
    out, why = add_log_dirs(_doc(), dirs)
    assert why is None
    assert out["brokers"][0]["logDirs"][1] == {"path": "/d/1", "capacity": 500.0, "online": False}
    assert out["partitions"][1]["logDirs"] == ["/d/0", "/d/1"]


def test_without_sizes_or_with_a_replica_in_no_dir_the_snapshot_goes_without_log_dirs() -> None:
    doc = _doc()
    old_kafka = {1: (_dir("/d/0", ("t", 0), ("t", 1), size=None),), 2: (_dir("/d/0", ("t", 0), ("t", 1)),)}
    out, why = add_log_dirs(doc, old_kafka)
    assert out == doc and why is not None and "broker 1" in why and "size" in why
    lost = {1: (_dir("/d/0", ("t", 0)),), 2: (_dir("/d/0", ("t", 0), ("t", 1)),)}
    out, why = add_log_dirs(doc, lost)
    assert out == doc and why == "broker 1 lists t-1 in none of its log dirs"
