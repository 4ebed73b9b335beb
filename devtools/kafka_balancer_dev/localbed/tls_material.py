"""TLS material of the secured beds: Kafka's (JDK ``keytool`` and ``openssl``) and an https server's
(``openssl`` alone, PEM files: what Prometheus's web server reads).

For Kafka, a throw-away CA signs one broker certificate for ``IP:127.0.0.1`` and one client certificate (for
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

from kafka_balancer_dev.errors import BedError

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
        _signed_by(ca_store, csr, broker_pem, "san=ip:127.0.0.1"),
        ["-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_pem), "-keystore", str(broker_store)],
        ["-importcert", "-alias", "broker", "-file", str(broker_pem), "-keystore", str(broker_store)],
    ]
    client_key, client_csr, client_pem = (
        directory / "client.key",
        directory / "client.csr",
        directory / "client.pem",
    )
    steps.append(_signed_by(ca_store, client_csr, client_pem, "eku=clientAuth"))
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


def _signed_by(ca_store: Path, request: Path, certificate: Path, extension: str) -> list[str]:
    """The keytool step signing ``request`` with the CA into ``certificate``."""
    signing = ["-gencert", "-rfc", "-alias", "ca", "-keystore", str(ca_store), "-infile", str(request)]
    return [*signing, "-outfile", str(certificate), "-ext", extension, "-validity", VALIDITY_DAYS]


@dataclass(frozen=True)
class HttpsMaterial:
    """A throw-away CA and the certificate and key it signed for ``IP:127.0.0.1`` (PEM files)."""

    ca_pem: Path
    cert_pem: Path
    key_pem: Path


def make_https_material(directory: Path) -> HttpsMaterial:
    """Create a CA and a server certificate for 127.0.0.1 in ``directory`` (emptied first)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(mode=0o700, parents=True)
    ca_key, ca_pem = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "server.key", directory / "server.csr", directory / "server.pem"
    extensions = directory / "server.ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl = _openssl()
    env = dict(os.environ)
    _run(
        [openssl, "req", "-x509", *ec, "-subj", "/CN=kafka-balancer bed CA", "-days", VALIDITY_DAYS,
         "-keyout", str(ca_key), "-out", str(ca_pem)],
        "openssl req -x509", env,
    )  # fmt: skip
    _run(
        [openssl, "req", "-new", *ec, "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(csr)],
        "openssl req", env,
    )  # fmt: skip
    _run(
        [openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca_pem), "-CAkey", str(ca_key),
         "-CAcreateserial", "-days", VALIDITY_DAYS, "-extfile", str(extensions), "-out", str(cert)],
        "openssl x509", env,
    )  # fmt: skip
    return HttpsMaterial(ca_pem, cert, key)


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
