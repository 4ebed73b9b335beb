"""The node tier's Kafka StatefulSets as rendered: ids and racks follow the ordinal, each broker's claim
binds the volume made for it, the Services select what they serve, and the shared broker properties
leave to the entrypoint what differs per pod."""

from __future__ import annotations

from typing import Any

from kafka_balancer_dev.localbed import kafka_statefulset as sts

SPEC = sts.KafkaPods(namespace="kafka", image="kafka-balancer.invalid/kafka:4.3.1-x", cluster_id="c")


def by_kind_and_name(spec: sts.KafkaPods) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m["kind"], m["metadata"]["name"]): m for m in sts.manifests(spec)}


def test_ids_and_racks_follow_the_ordinal() -> None:
    assert [sts.broker_id(o) for o in range(5)] == [100, 101, 102, 103, 104]
    assert [sts.rack_of(SPEC, o) for o in range(5)] == ["a", "b", "c", "a", "b"]


def test_the_broker_statefulset_claims_the_volume_made_for_each_ordinal() -> None:
    broker = by_kind_and_name(SPEC)[("StatefulSet", "kafka")]["spec"]
    assert broker["replicas"] == 4
    (claim,) = broker["volumeClaimTemplates"]
    # Kubernetes names a StatefulSet's claims <template>-<statefulset>-<ordinal>.
    assert sts.claim_name(2) == f"{claim['metadata']['name']}-kafka-2"
    assert claim["spec"]["resources"]["requests"]["storage"] == SPEC.storage
    volume = sts.persistent_volume(SPEC, 2, "/v/2")["spec"]
    assert volume["claimRef"] == {"namespace": "kafka", "name": "data-kafka-2"}
    assert volume["storageClassName"] == claim["spec"]["storageClassName"]
    assert volume["capacity"]["storage"] == SPEC.storage


def test_the_services_select_the_pods_they_serve() -> None:
    objects = by_kind_and_name(SPEC)
    broker = objects[("StatefulSet", "kafka")]["spec"]
    controller = objects[("StatefulSet", "kafka-controller")]["spec"]
    assert broker["selector"]["matchLabels"] == SPEC.labels == broker["template"]["metadata"]["labels"]
    assert objects[("Service", "kafka-bootstrap")]["spec"]["selector"] == SPEC.labels
    assert objects[("Service", "kafka")]["spec"]["clusterIP"] == "None"
    assert broker["serviceName"] == "kafka"
    controller_labels = controller["template"]["metadata"]["labels"]
    assert objects[("Service", "kafka-controller")]["spec"]["selector"] == controller_labels
    assert controller_labels != SPEC.labels


def test_the_shared_properties_leave_the_per_pod_ones_to_the_entrypoint() -> None:
    props = sts.broker_properties(SPEC)
    assert not {"node.id", "broker.rack", "log.dirs", "advertised.listeners"} & props.keys()
    assert (
        props["controller.quorum.voters"]
        == "1@kafka-controller-0.kafka-controller.kafka.svc.cluster.local:9093"
    )
    assert props["offsets.topic.replication.factor"] == "3"
    controller_props = sts.controller_properties(SPEC)
    assert not {"node.id", "log.dirs"} & controller_props.keys()
    assert controller_props["controller.quorum.voters"] == props["controller.quorum.voters"]
    # The controller fences a broker that stops heartbeating: as fast as the local bed's.
    assert controller_props["broker.session.timeout.ms"] == props["broker.session.timeout.ms"] == "4000"
