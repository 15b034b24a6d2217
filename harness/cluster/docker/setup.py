"""``eos-chaos setup --docker``: the engine running, the Kafka images and the app example image built."""
from __future__ import annotations

import time
from typing import Callable, Iterable


def setup_docker(versions: Iterable[str], say: Callable[[str], None] = print) -> list[str]:
    """Ensure the engine (install / start, harness.cluster.docker.engine.ensure_engine) and build
    ``kafka-eos-chaos/kafka:<v>`` for every version in ``versions``; report each step with its
    seconds through ``say``. Returns the image tags. Raises DockerError / ArtifactError."""
    from harness.cluster.docker.engine import ensure_engine
    from harness.cluster.docker.image import BASE_TAG, build_base_image, build_kafka_image

    t = time.monotonic()
    client = ensure_engine()
    say(f"docker engine {client.version().get('Version', '?')}: up ({time.monotonic() - t:.1f} s)")
    t = time.monotonic()
    build_base_image(client)
    say(f"docker base image {BASE_TAG}: ready ({time.monotonic() - t:.1f} s)")
    tags = []
    for v in versions:
        t = time.monotonic()
        tags.append(build_kafka_image(v, client=client))
        say(f"docker image {tags[-1]}: ready ({time.monotonic() - t:.1f} s)")
    t = time.monotonic()
    from harness.examples.docker_image import build_copy_service_image

    say(f"docker image {build_copy_service_image(client)} (the app workload's example): ready "
        f"({time.monotonic() - t:.1f} s)")
    return tags
