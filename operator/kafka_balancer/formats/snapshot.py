"""The cluster snapshot (JSON, version 1): parsing and validation into the frozen model."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafka_balancer.errors import InputError
from kafka_balancer.formats.errors import one_line
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, LogDir, Partition, PartitionLoad

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


class LogDirIn(_Model):
    path: str = Field(min_length=1)
    capacity: Positive
    online: bool = True


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
    # Optional and backward compatible: a snapshot without log dirs plans as before.
    log_dirs: list[LogDirIn] | None = Field(default=None, alias="logDirs", min_length=1)


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
    # The log dir of each replica, aligned with ``replicas``; required when the brokers list theirs.
    log_dirs: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, alias="logDirs")


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
    # Log dirs are all or nothing: a planner that knew some brokers' dirs but not others' could
    # neither check the intra-broker goals nor leave every dir to Kafka.
    described = any(b.log_dirs is not None for b in snap.brokers)
    for i, b in enumerate(snap.brokers):
        if b.id in seen:
            raise InputError(f"{source}.brokers[{i}].id: broker id {b.id} appears twice")
        seen.add(b.id)
        log_dirs = _log_dirs(b, f"{source}.brokers[{i}].logDirs", described)
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
                log_dirs=log_dirs,
            )
        )
    dirs_of = {b.id: {d.path for d in b.log_dirs} for b in brokers}
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
        replica_dirs = _replica_dirs(p, where, dirs_of, described)
        load = p.load
        partitions.append(
            Partition(
                topic=p.topic,
                partition=p.partition,
                replicas=tuple(p.replicas),
                leader=leader,
                load=PartitionLoad(load.disk, load.network_in, load.network_out, load.cpu, load.follower_cpu),
                log_dirs=replica_dirs,
            )
        )
    return Cluster(tuple(brokers), tuple(partitions))


def _log_dirs(broker: BrokerIn, where: str, described: bool) -> tuple[LogDir, ...]:
    if broker.log_dirs is None:
        if described:
            raise InputError(f"{where}: missing (when one broker lists its log dirs, every broker must)")
        return ()
    paths: set[str] = set()
    for j, d in enumerate(broker.log_dirs):
        if d.path in paths:
            raise InputError(f"{where}[{j}].path: {d.path!r} appears twice")
        paths.add(d.path)
    return tuple(LogDir(d.path, d.capacity, d.online) for d in broker.log_dirs)


def _replica_dirs(
    p: PartitionIn, where: str, dirs_of: dict[int, set[str]], described: bool
) -> tuple[str, ...]:
    if p.log_dirs is None:
        if described:
            raise InputError(f"{where}.logDirs: missing (the brokers list their log dirs)")
        return ()
    if not described:
        raise InputError(f"{where}.logDirs: no broker lists its logDirs")
    if len(p.log_dirs) != len(p.replicas):
        raise InputError(
            f"{where}.logDirs: {len(p.log_dirs)} log dir(s) for {len(p.replicas)} replicas {p.replicas}"
        )
    for j, (broker, path) in enumerate(zip(p.replicas, p.log_dirs, strict=True)):
        if path not in dirs_of[broker]:
            raise InputError(f"{where}.logDirs[{j}]: broker {broker} has no log dir {path!r}")
    return tuple(p.log_dirs)


def read_snapshot(path: Path) -> Cluster:
    return parse_snapshot(load_json(path, "snapshot"), path.name)


def load_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{what} {path}: not UTF-8 text") from None
    return json_from_text(text, what, str(path))


def json_from_text(text: str, what: str, source: str) -> Any:
    """``text`` as JSON; ``source`` (a path or URI) names it in the error."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what} {source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise InputError(f"{what} {source}: {exc}") from None


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
                **(
                    {
                        "logDirs": [
                            {"path": d.path, "capacity": d.capacity, "online": d.online} for d in b.log_dirs
                        ]
                    }
                    if b.log_dirs
                    else {}
                ),
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
                **({"logDirs": list(p.log_dirs)} if p.log_dirs else {}),
            }
            for p in cluster.partitions
        ],
    }
