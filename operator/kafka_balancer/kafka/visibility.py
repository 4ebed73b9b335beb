"""What Kafka's ACLs may hide from the principal: every read that must see the whole cluster checks it.

Kafka's authorizer leaves out, without an error, every topic the principal may not describe (from
Metadata and from DescribeLogDirs), so nothing such a read returns reveals one. Two questions tell
it: whether a topic no one made, under a fresh random name, answers "unknown topic" (the principal
may describe any name) or "not authorized" (some topics may be hidden, which cannot be told); and
which deny ACLs name a topic or group for this principal or for everyone (DescribeAcls).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka.admin._acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType

# How many of the topics or groups the principal cannot see an error names (then: "and N more").
NAMED = 5
# Deny ACLs that hide a topic or a group: DESCRIBE, or every operation.
_HIDING = (AclOperation.DESCRIBE, AclOperation.ALL)
_KINDS = {ResourceType.TOPIC: "topic", ResourceType.GROUP: "group"}
# None matches any name, principal and host (the stubs type them str).
DENY_ACLS = AclBindingFilter(
    ResourceType.ANY,
    None,  # type: ignore[arg-type]
    ResourcePatternType.ANY,
    None,  # type: ignore[arg-type]
    None,  # type: ignore[arg-type]
    AclOperation.ANY,
    AclPermissionType.DENY,
)
NOT_EVERY_TOPIC = (
    "Kafka's ACLs do not let this principal DESCRIBE every topic, and Kafka leaves those it may not "
    "describe out of its answers, so which are hidden cannot be told"
)


def probe_topic() -> str:
    """A topic name no one made (DescribeTopics never creates one)."""
    return f"kafka-balancer-probe-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class Denial:
    """A deny ACL that hides ``kind`` (``topic`` or ``group``) ``name`` from the principal; a prefixed
    one hides every name that starts with it."""

    kind: str
    name: str
    prefixed: bool = False

    def __str__(self) -> str:
        return f"{self.name}*" if self.prefixed else self.name


def denials_of(bindings: Iterable[AclBinding], principal: str | None) -> list[Denial]:
    """The deny ACLs among ``bindings`` (an answer to :data:`DENY_ACLS`) that hide a topic or a group
    from ``principal`` (or from everyone)."""
    everyone = {"User:*", *([principal] if principal else [])}
    return [
        Denial(_KINDS[b.restype], b.name, b.resource_pattern_type == ResourcePatternType.PREFIXED)
        for b in bindings
        if b.restype in _KINDS and b.operation in _HIDING and b.principal in everyone
    ]


def unseen(denials: Iterable[Denial], refused_groups: Iterable[str]) -> str | None:
    """Why the principal cannot see the whole cluster, naming a few of what it cannot see; None when
    nothing is kept from it."""
    names: dict[str, set[str]] = {"topic": set(), "group": set()}
    for denial in denials:
        names[denial.kind].add(str(denial))
    names["group"].update(refused_groups)
    parts = []
    for kind, how in (("topic", "describe"), ("group", "read the offsets of")):
        found = sorted(names[kind])
        if found:
            more = f" and {len(found) - NAMED} more" if len(found) > NAMED else ""
            parts.append(f"{len(found)} {kind}(s) it may not {how}: {', '.join(found[:NAMED])}{more}")
    if not parts:
        return None
    return f"Kafka's ACLs keep part of the cluster from this principal, {'; '.join(parts)}"
