"""The cluster snapshot (JSON, version 1): parsing and validation into the frozen model."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafka_balancer.errors import InputError
from kafka_balancer.formats.errors import one_line
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad

NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Model(BaseModel):
    # Unknown fields are ignored so that producers may add data; known ones are strict.
    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True)


class CapacityIn(_Model):
    disk: Positive
    network_in: Positive = Field(alias="networkIn")
    network_out: Positive = Field(alias="networkOut")
    cpu: Positive


class BrokerIn(_Model):
    id: int = Field(ge=0)
    rack: str | None = None
    # "failed" is optional and backward compatible: older snapshots never carry it.
    state: Literal["active", "draining", "failed"] = "active"
    capacity: CapacityIn
    warm_up_share: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(
        default=1.0, alias="warmUpShare"
    )
    # Optional and backward compatible: absent means false.
    demoted: bool = False


class LoadIn(_Model):
    disk: NonNegative
    network_in: NonNegative = Field(alias="networkIn")
    network_out: NonNegative = Field(alias="networkOut")
    cpu: NonNegative
    follower_cpu: NonNegative = Field(default=0.0, alias="followerCpu")


class PartitionIn(_Model):
    topic: str = Field(min_length=1)
    partition: int = Field(ge=0)
    replicas: list[int] = Field(min_length=1)
    leader: int | None = None
    load: LoadIn


class SnapshotIn(_Model):
    version: Literal[1]
    brokers: list[BrokerIn] = Field(min_length=1)
    partitions: list[PartitionIn]


def parse_snapshot(data: Any, source: str = "snapshot") -> Cluster:
    """Validate a decoded snapshot document; InputError names the first offending field."""
    try:
        snap = SnapshotIn.model_validate(data)
    except ValidationError as exc:
        raise InputError(one_line(exc, source)) from None
    return _to_cluster(snap, source)


def _to_cluster(snap: SnapshotIn, source: str) -> Cluster:
    brokers = []
    seen: set[int] = set()
    for i, b in enumerate(snap.brokers):
        if b.id in seen:
            raise InputError(f"{source}.brokers[{i}].id: broker id {b.id} appears twice")
        seen.add(b.id)
        cap = b.capacity
        brokers.append(
            Broker(
                id=b.id,
                # A broker without a rack is a rack of its own, as Kafka's rack-aware assignment treats it.
                rack=b.rack if b.rack else f"(no rack: broker {b.id})",
                state=BrokerState(b.state),
                capacity=(cap.disk, cap.network_in, cap.network_out, cap.cpu),
                warm_up_share=b.warm_up_share,
                demoted=b.demoted,
            )
        )
    partitions = []
    names: set[tuple[str, int]] = set()
    for i, p in enumerate(snap.partitions):
        where = f"{source}.partitions[{i}]"
        if (p.topic, p.partition) in names:
            raise InputError(f"{where}: partition {p.topic}-{p.partition} appears twice")
        names.add((p.topic, p.partition))
        if len(set(p.replicas)) != len(p.replicas):
            raise InputError(f"{where}.replicas: {p.replicas} lists a broker twice")
        for r in p.replicas:
            if r not in seen:
                raise InputError(f"{where}.replicas: broker {r} is not in brokers")
        leader = p.replicas[0] if p.leader is None or p.leader < 0 else p.leader
        if leader not in p.replicas:
            raise InputError(f"{where}.leader: broker {leader} is not one of the replicas {p.replicas}")
        load = p.load
        partitions.append(
            Partition(
                topic=p.topic,
                partition=p.partition,
                replicas=tuple(p.replicas),
                leader=leader,
                load=PartitionLoad(load.disk, load.network_in, load.network_out, load.cpu, load.follower_cpu),
            )
        )
    return Cluster(tuple(brokers), tuple(partitions))


def read_snapshot(path: Path) -> Cluster:
    return parse_snapshot(load_json(path, "snapshot"), path.name)


def load_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{what} {path}: not UTF-8 text") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what} {path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise InputError(f"{what} {path}: {exc}") from None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def cluster_to_snapshot(cluster: Cluster) -> dict[str, Any]:
    """The snapshot document of a model (what the collector writes, what tests generate)."""
    return {
        "version": 1,
        "brokers": [
            {
                "id": b.id,
                "rack": b.rack,
                "state": b.state.value,
                "capacity": dict(zip(("disk", "networkIn", "networkOut", "cpu"), b.capacity, strict=True)),
                **({} if math.isclose(b.warm_up_share, 1.0) else {"warmUpShare": b.warm_up_share}),
                **({"demoted": True} if b.demoted else {}),
            }
            for b in cluster.brokers
        ],
        "partitions": [
            {
                "topic": p.topic,
                "partition": p.partition,
                "replicas": list(p.replicas),
                "leader": p.leader,
                "load": {
                    "disk": p.load.disk,
                    "networkIn": p.load.network_in,
                    "networkOut": p.load.network_out,
                    "cpu": p.load.cpu,
                    "followerCpu": p.load.follower_cpu,
                },
            }
            for p in cluster.partitions
        ],
    }
