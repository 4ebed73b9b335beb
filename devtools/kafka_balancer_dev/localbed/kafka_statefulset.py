"""Pure rendering of Kafka as pods on the node bed (``localbed.node``): the image of
``hack/image/build-kafka.sh`` run as one KRaft controller (a StatefulSet of 1) and a broker StatefulSet.

What differs per broker follows from its pod's ordinal, in the image's entrypoint, so that a scaled-up
pod configures itself: ``node.id`` is :data:`BROKER_ID_OFFSET` + ordinal (:func:`broker_id`), its rack
the ordinal-th of the racks, round robin (:func:`rack_of`), its PLAINTEXT listener advertised on the
pod's stable name ``kafka-<ordinal>.kafka.<namespace>.svc.cluster.local``. Each broker also advertises
a HOST listener on its pod IP: this machine reaches the pods' bridge but does not resolve cluster names.

Each broker's log directory is its volume claim ``data-kafka-<ordinal>``, bound to a hostPath
PersistentVolume made for it (:func:`persistent_volume`): the node bed has no dynamic provisioner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_balancer_dev.localbed import kafka_config as cfg

BROKERS = "kafka"
CONTROLLER = "kafka-controller"
BOOTSTRAP = "kafka-bootstrap"
BROKER_ID_OFFSET = 100
CONTROLLER_ID = 1
PORT = 9092
HOST_PORT = 9094
CONTROLLER_PORT = 9093
DATA_VOLUME = "data"
STORAGE_CLASS = "kb-node-local"
# Labels the PersistentVolumes (cluster-wide, so deleting the namespace leaves them) with the namespace.
BED_LABEL = "kafka-balancer.dev/bed"
# Runs as the image's user; a hostPath volume ignores fsGroup, so its directory is made for this uid.
UID = 65532
# The settings that the entrypoint writes per pod.
_PER_POD = ("node.id", "broker.rack", "log.dirs", "advertised.listeners")
# Small brokers: the node tier runs them beside the operator and Spark on two cores.
_JVM = "-Xms64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -XX:+ExitOnOutOfMemoryError"


@dataclass(frozen=True, slots=True)
class KafkaPods:
    """What the manifests are made of."""

    namespace: str
    image: str
    cluster_id: str
    brokers: int = 4
    racks: tuple[str, ...] = ("a", "b", "c")
    broker_heap: str = "192m"
    controller_heap: str = "128m"
    storage: str = "1Gi"

    @property
    def labels(self) -> dict[str, str]:
        """What a pool selects the brokers by (the broker StatefulSet and its pods carry these)."""
        return {"app.kubernetes.io/name": "kafka", "app.kubernetes.io/component": "broker"}

    @property
    def bootstrap_servers(self) -> str:
        """The bootstrap Service, for clients in the cluster."""
        return f"{BOOTSTRAP}.{self.namespace}.svc.{_DOMAIN}:{PORT}"


_DOMAIN = "cluster.local"


def broker_id(ordinal: int) -> int:
    """The node.id of the broker StatefulSet's pod ``kafka-<ordinal>``."""
    return BROKER_ID_OFFSET + ordinal


def rack_of(spec: KafkaPods, ordinal: int) -> str:
    return spec.racks[ordinal % len(spec.racks)]


def claim_name(ordinal: int) -> str:
    """The volume claim the StatefulSet makes for pod ``kafka-<ordinal>``."""
    return f"{DATA_VOLUME}-{BROKERS}-{ordinal}"


def _voters(spec: KafkaPods) -> str:
    return f"{CONTROLLER_ID}@{CONTROLLER}-0.{CONTROLLER}.{spec.namespace}.svc.{_DOMAIN}:{CONTROLLER_PORT}"


def controller_properties(spec: KafkaPods) -> dict[str, str]:
    """The local bed's controller settings (its brokers' session timeout among them) on the pod's
    addresses; the entrypoint writes node.id and log.dirs."""
    shared = cfg.controller_properties(controller_port=CONTROLLER_PORT, metadata_dir=Path())
    return {
        **{key: value for key, value in shared.items() if key not in _PER_POD},
        "controller.quorum.voters": _voters(spec),
        "listeners": f"{cfg.CONTROLLER_LISTENER}://0.0.0.0:{CONTROLLER_PORT}",
    }


def broker_properties(spec: KafkaPods) -> dict[str, str]:
    """The local bed's broker settings (``kafka_config``) but for what the entrypoint writes per pod."""
    shared = cfg.broker_properties(
        broker_id=0,
        rack="",
        port=PORT,
        controller_port=CONTROLLER_PORT,
        log_dirs=(),
        cluster_size=spec.brokers,
    )
    return {
        **{key: value for key, value in shared.items() if key not in _PER_POD},
        "controller.quorum.voters": _voters(spec),
        "listeners": f"{cfg.LISTENER}://0.0.0.0:{PORT},HOST://0.0.0.0:{HOST_PORT}",
        "listener.security.protocol.map": f"{cfg.LISTENER}:PLAINTEXT,HOST:PLAINTEXT,"
        f"{cfg.CONTROLLER_LISTENER}:PLAINTEXT",
    }


def _meta(name: str, spec: KafkaPods, labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": spec.namespace, "labels": labels}


def _service(
    name: str, spec: KafkaPods, selector: dict[str, str], ports: Sequence[int], headless: bool
) -> dict[str, Any]:
    service: dict[str, Any] = {
        "selector": selector,
        "ports": [{"name": f"p{port}", "port": port, "targetPort": port} for port in ports],
    }
    if headless:
        # Peers resolve each other before they are ready: a broker registers only once it reaches them.
        service |= {"clusterIP": "None", "publishNotReadyAddresses": True}
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, spec, selector), "spec": service}


def _container(
    spec: KafkaPods, name: str, heap: str, env: dict[str, str], ports: Sequence[int]
) -> dict[str, Any]:
    return {
        "name": "kafka",
        "image": spec.image,
        # Loaded into the node's containerd from an archive: there is no registry to pull from.
        "imagePullPolicy": "Never",
        "env": [
            *({"name": key, "value": value} for key, value in env.items()),
            {"name": "KAFKA_CLUSTER_ID", "value": spec.cluster_id},
            {"name": "KAFKA_JVM_OPTS", "value": f"{_JVM} -Xmx{heap}"},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "ports": [{"containerPort": port} for port in ports],
        "readinessProbe": {"tcpSocket": {"port": ports[0]}, "periodSeconds": 2},
        "resources": {"requests": {"cpu": "50m", "memory": "256Mi"}, "limits": {"memory": "640Mi"}},
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/kafka"},
            {"name": DATA_VOLUME, "mountPath": "/var/lib/kafka"},
        ],
    }


def _stateful_set(
    name: str, spec: KafkaPods, labels: dict[str, str], replicas: int, pod: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(name, spec, labels),
        "spec": {
            "serviceName": name,
            "replicas": replicas,
            # All at once: a broker waits for no other to start, and start-up is the tier's cost.
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
            **extra,
        },
    }


def _pod(container: dict[str, Any], config: str, *volumes: dict[str, Any]) -> dict[str, Any]:
    return {
        "securityContext": {"runAsUser": UID, "runAsGroup": UID, "runAsNonRoot": True},
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 30,
        "containers": [container],
        "volumes": [{"name": "config", "configMap": {"name": config}}, *volumes],
    }


def manifests(spec: KafkaPods) -> list[dict[str, Any]]:
    """Everything but the PersistentVolumes, in the order to apply."""
    controller_labels = {"app.kubernetes.io/name": "kafka", "app.kubernetes.io/component": "controller"}
    config_maps = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(name, spec, labels),
            "data": {"server.properties": cfg.render_properties(props)},
        }
        for name, labels, props in (
            (CONTROLLER, controller_labels, controller_properties(spec)),
            (BROKERS, spec.labels, broker_properties(spec)),
        )
    ]
    controller = _container(
        spec,
        CONTROLLER,
        spec.controller_heap,
        {"KAFKA_NODE_ID_OFFSET": str(CONTROLLER_ID), "KAFKA_DATA_DIR": "/var/lib/kafka/metadata"},
        [CONTROLLER_PORT],
    )
    broker = _container(
        spec,
        BROKERS,
        spec.broker_heap,
        {
            "KAFKA_NODE_ID_OFFSET": str(BROKER_ID_OFFSET),
            "KAFKA_RACKS": ",".join(spec.racks),
            "KAFKA_SERVICE": BROKERS,
            "KAFKA_DATA_DIR": "/var/lib/kafka/logs",
        },
        [PORT, HOST_PORT],
    )
    claim = {
        "metadata": {"name": DATA_VOLUME},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": STORAGE_CLASS,
            "resources": {"requests": {"storage": spec.storage}},
        },
    }
    return [
        *config_maps,
        _service(CONTROLLER, spec, controller_labels, [CONTROLLER_PORT], headless=True),
        _service(BROKERS, spec, spec.labels, [PORT, HOST_PORT], headless=True),
        _service(BOOTSTRAP, spec, spec.labels, [PORT, HOST_PORT], headless=False),
        _stateful_set(
            CONTROLLER,
            spec,
            controller_labels,
            1,
            _pod(controller, CONTROLLER, {"name": DATA_VOLUME, "emptyDir": {}}),
        ),
        _stateful_set(
            BROKERS, spec, spec.labels, spec.brokers, _pod(broker, BROKERS), volumeClaimTemplates=[claim]
        ),
    ]


def persistent_volume(spec: KafkaPods, ordinal: int, host_path: str) -> dict[str, Any]:
    """The volume of broker ``ordinal``, bound ahead to its claim: the same directory whenever the pod
    comes back, as a cloud disk would be."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": f"{spec.namespace}-{claim_name(ordinal)}",
            "labels": {BED_LABEL: spec.namespace},
        },
        "spec": {
            "capacity": {"storage": spec.storage},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": STORAGE_CLASS,
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": spec.namespace, "name": claim_name(ordinal)},
            "hostPath": {"path": host_path, "type": "Directory"},
        },
    }
