"""TLS material of a secured Kafka bed, made with the JDK's ``keytool`` and the system's ``openssl``.

A throw-away CA signs one broker certificate for ``IP:127.0.0.1`` and one client certificate (for
the listener that requires one: mutual TLS); brokers read a PKCS12 keystore that also holds the CA
as trusted, clients trust the CA's PEM and present the client PEM pair. ``openssl`` only makes the
client's key and signing request, because keytool cannot write a private key as PEM (what Kafka's
C client reads). Everything lives in the bed's own directory (mode 0700); passwords reach keytool
through its environment, never its command line.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from kafka_balancer.errors import BedError

KEYTOOL_TIMEOUT_S = 60.0
VALIDITY_DAYS = "2"
_PASSWORD_ENV = "KB_BED_STORE_PASSWORD"


@dataclass(frozen=True)
class TlsMaterial:
    """Where a bed's TLS files are; ``keystore_password`` opens ``keystore`` (PKCS12)."""

    ca_pem: Path
    keystore: Path
    client_cert_pem: Path
    client_key_pem: Path
    keystore_password: str = field(repr=False)


def _keytool() -> str:
    home = os.environ.get("JAVA_HOME")
    keytool = str(Path(home) / "bin" / "keytool") if home else shutil.which("keytool")
    if not keytool or not Path(keytool).exists():
        raise BedError("keytool not found (install a JDK 17+ or set JAVA_HOME)")
    return keytool


def make_tls_material(directory: Path) -> TlsMaterial:
    """Create a CA and a CA-signed broker keystore in ``directory`` (emptied first)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(mode=0o700, parents=True)
    password = secrets.token_urlsafe(18)
    ca_store, ca_pem = directory / "ca.p12", directory / "ca.pem"
    broker_store, csr, broker_pem = (
        directory / "broker.p12",
        directory / "broker.csr",
        directory / "broker.pem",
    )
    store = ["-storetype", "PKCS12", "-storepass:env", _PASSWORD_ENV]
    keypair = ["-genkeypair", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", VALIDITY_DAYS]
    steps = [
        [
            *keypair,
            "-alias",
            "ca",
            "-dname",
            "CN=kafka-balancer bed CA",
            "-ext",
            "bc:c",
            "-keystore",
            str(ca_store),
        ],
        ["-exportcert", "-rfc", "-alias", "ca", "-keystore", str(ca_store), "-file", str(ca_pem)],
        [*keypair, "-alias", "broker", "-dname", "CN=127.0.0.1", "-keystore", str(broker_store)],
        ["-certreq", "-alias", "broker", "-keystore", str(broker_store), "-file", str(csr)],
        [
            "-gencert",
            "-rfc",
            "-alias",
            "ca",
            "-keystore",
            str(ca_store),
            "-infile",
            str(csr),
            "-outfile",
            str(broker_pem),
            "-ext",
            "san=ip:127.0.0.1",
            "-validity",
            VALIDITY_DAYS,
        ],
        ["-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_pem), "-keystore", str(broker_store)],
        ["-importcert", "-alias", "broker", "-file", str(broker_pem), "-keystore", str(broker_store)],
    ]
    client_key, client_csr, client_pem = (
        directory / "client.key",
        directory / "client.csr",
        directory / "client.pem",
    )
    steps.append(
        [
            "-gencert",
            "-rfc",
            "-alias",
            "ca",
            "-keystore",
            str(ca_store),
            "-infile",
            str(client_csr),
            "-outfile",
            str(client_pem),
            "-ext",
            "eku=clientAuth",
            "-validity",
            VALIDITY_DAYS,
        ]
    )
    _run(
        [
            _openssl(),
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=kafka-balancer-client",
            "-keyout",
            str(client_key),
            "-out",
            str(client_csr),
        ],
        "openssl req",
        dict(os.environ),
    )
    keytool = _keytool()
    env = {**os.environ, _PASSWORD_ENV: password}
    for step in steps:
        # Short-lived JVMs: skip the optimising compiler, as the bed's other JVMs do.
        argv = [keytool, "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", *step, *store]
        _run(argv, f"keytool {step[0]}", env)
    return TlsMaterial(ca_pem, broker_store, client_pem, client_key, password)


def _openssl() -> str:
    found = shutil.which("openssl")
    if found is None:
        raise BedError("openssl not found (Debian package openssl)")
    return found


def _run(argv: list[str], what: str, env: dict[str, str]) -> None:
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=KEYTOOL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise BedError(f"{what} did not finish within {KEYTOOL_TIMEOUT_S:.0f}s") from err
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:]
        raise BedError(f"{what} failed (exit {done.returncode}): {' '.join(last)}")
