"""The Kafka bed's authorizer option: what each node enforces, and ACLs as kafka-acls.sh names them."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin._acl import AclOperation, AclPermissionType
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kafka_config as cfg
from kafka_balancer_dev.localbed.kafka import CLUSTER_RESOURCE, Acl, KafkaBed


def test_a_node_with_the_authorizer_refuses_what_no_acl_allows_except_to_the_bed() -> None:
    props = cfg.with_authorizer({"node.id": "1"})

    assert props == {
        "node.id": "1",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": "User:ANONYMOUS",
    }


def test_an_acl_spelled_as_kafka_acls_sh_does_becomes_its_binding() -> None:
    cluster = Acl("cluster", CLUSTER_RESOURCE, "AlterConfigs").binding("User:u")
    denied = Acl("topic", "audit-", "Describe", pattern="prefixed", allow=False).binding("User:u")

    assert (cluster.restype, cluster.name, cluster.operation) == (
        ResourceType.BROKER,
        "kafka-cluster",
        AclOperation.ALTER_CONFIGS,
    )
    assert cluster.permission_type == AclPermissionType.ALLOW
    assert (denied.restype, denied.resource_pattern_type) == (
        ResourceType.TOPIC,
        ResourcePatternType.PREFIXED,
    )
    assert (denied.operation, denied.permission_type) == (AclOperation.DESCRIBE, AclPermissionType.DENY)


def test_an_acl_kafka_does_not_know_is_refused() -> None:
    with pytest.raises(BedError, match="not an ACL"):
        Acl("topic", "t", "Teleport").binding("User:u")


def test_the_authorizer_needs_the_secured_listeners(tmp_path: Path) -> None:
    with pytest.raises(BedError, match="secured=True"):
        KafkaBed(tmp_path, tmp_path / "run", authorizer=True)
