"""The example copy service as a container image, built locally (example (d) of the app workload).

``build_copy_service_image(client)`` makes ``kafka-eos-chaos/copy-service:example`` FROM the
harness's base image (Debian bookworm with python3, harness.cluster.docker.image.BASE_TAG) with
COPY steps only (no RUN: no container starts, no network is needed): the confluent-kafka
package of the harness's own Python (its wheel bundles librdkafka) under ``/opt/app/lib`` and
``copy_service.py``; the entrypoint runs the service, the scenario's ``command`` gives its
arguments (scenarios/app-copy-service-docker.yaml). ``eos-chaos setup --docker`` builds it.
A user's own image needs none of this: ``app: {image: my/app:1.2, command: [...]}``.
"""
from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

IMAGE = "kafka-eos-chaos/copy-service:example"
SOURCE_LABEL = "eos-chaos.source-digest"
DOCKERFILE = """FROM {base}
COPY lib/ /opt/app/lib/
COPY copy_service.py /opt/app/copy_service.py
ENV PYTHONPATH=/opt/app/lib PYTHONUNBUFFERED=1
ENTRYPOINT ["python3", "/opt/app/copy_service.py"]
"""


def build_copy_service_image(client, force: bool = False) -> str:
    """Build IMAGE (skipped when it exists and not ``force``) and return its tag. Raises
    DockerError when the build fails (the engine's last message)."""
    import confluent_kafka
    from docker.errors import APIError, BuildError, ImageNotFound

    from harness.cluster.docker.engine import DockerError
    from harness.cluster.docker.image import BASE_TAG, IMAGE_LABEL, build_base_image

    source = Path(__file__).with_name("copy_service.py")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    if not force:  # rebuilt when the service's source changed (its digest is a label)
        try:
            if client.images.get(IMAGE).labels.get(SOURCE_LABEL) == digest:
                return IMAGE
        except ImageNotFound:
            pass
    build_base_image(client)
    pkg = Path(confluent_kafka.__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="eosc-app-image-") as tmp:
        ctx = Path(tmp)
        shutil.copytree(pkg, ctx / "lib" / pkg.name, ignore=shutil.ignore_patterns("__pycache__"))
        libs = pkg.parent / f"{pkg.name}.libs"  # the bundled librdkafka and its dependencies
        if libs.is_dir():
            shutil.copytree(libs, ctx / "lib" / libs.name)
        shutil.copy(source, ctx / "copy_service.py")
        (ctx / "Dockerfile").write_text(DOCKERFILE.format(base=BASE_TAG))
        try:
            client.images.build(path=str(ctx), tag=IMAGE, labels={IMAGE_LABEL: "1", SOURCE_LABEL: digest}, rm=True)
        except (BuildError, APIError) as exc:
            raise DockerError(f"building {IMAGE} failed: {exc}") from None
    return IMAGE
