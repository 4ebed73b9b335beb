"""Trims the AWS SDK v2 bundle to the service clients S3A loads: ``trim_bundle.py SOURCE TARGET``.

The bundle shades every AWS service's client: 654 MiB, 98% of it services S3A never loads.
hadoop-aws's classes name only s3, sts (assumed roles) and kms (client-side encryption), so only those
are kept, with the bundle's shaded core, HTTP clients and service-loader files: 19 MiB.

Both recipes of the operator image run it: hack/s3a/provision.sh (hack/image/build.sh's jars) and the
Containerfile. Standard library only: the Containerfile's stage has no venv. Each kept entry keeps its
metadata (timestamps included), so a bundle gives the same bytes wherever Python's zipfile and zlib are
the same.
"""

import sys
import zipfile

KEEP = {"s3", "sts", "kms"}
source, target = sys.argv[1:]
with zipfile.ZipFile(source) as full, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as trimmed:
    for entry in full.infolist():
        parts = entry.filename.split("/")
        if (
            parts[:4] == ["software", "amazon", "awssdk", "services"]
            and len(parts) > 5
            and parts[4] not in KEEP
        ):
            continue
        trimmed.writestr(entry, full.read(entry))
