"""Kafka ACLs as docs/security.md lists them, granted on a bed that enforces them."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka_balancer_dev.localbed.kafka import CLUSTER_RESOURCE, Acl, KafkaBed

# The principal of the bed's client certificate (localbed/tls_material.py), no mapping rules set.
CERTIFICATE_PRINCIPAL = "User:CN=kafka-balancer-client"
SECURITY_MD = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def documented(section: str) -> list[Acl]:
    """The ACLs the ``kafka-acls.sh`` commands under ``### section`` of docs/security.md grant."""
    text = SECURITY_MD.read_text().split(f"\n### {section}\n", 1)[1].split("\n### ", 1)[0]
    commands = text.replace("\\\n", " ").splitlines()
    acls = []
    for command in (c for c in commands if c.startswith("kafka-acls.sh")):
        args = shlex.split(command)
        if "--cluster" in args:
            resource, name = "cluster", CLUSTER_RESOURCE
        else:
            flag = next(a for a in args if a in ("--topic", "--group"))
            resource, name = flag[2:], args[args.index(flag) + 1]
        operations = [args[i + 1] for i, a in enumerate(args) if a == "--operation"]
        assert operations, command
        acls += [Acl(resource, name, op) for op in operations]
    assert acls, f"no kafka-acls.sh command under '### {section}' of {SECURITY_MD}"
    return acls


@contextmanager
def granted(bed: KafkaBed, acls: list[Acl], principal: str | None = None) -> Iterator[None]:
    """``acls`` for ``principal`` (default: the bed's SCRAM user) for the block."""
    principal = principal or bed.scram_principal
    bed.add_acls(principal, acls)
    try:
        yield
    finally:
        bed.remove_acls(principal, acls)
