"""``eos-chaos setup --docker``: the engine running, the Kafka images and the caller's images
built (the CLI adds the app example image, harness.examples.docker_image: passed in, since
harness.cluster imports nothing of harness.examples)."""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable


def setup_docker(versions: Iterable[str], say: Callable[[str], None] = print,
                 images: Iterable[tuple[Callable[[Any], str], str]] = ()) -> list[str]:
    """Ensure the engine (install / start, harness.cluster.docker.engine.ensure_engine) and build
    ``kafka-eos-chaos/kafka:<v>`` for every version in ``versions``, then every ``(build, what)``
    of ``images`` (``build(client)`` returns the tag); report each step with its seconds through
    ``say``. Returns the Kafka image tags. Raises DockerError / ArtifactError."""
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
    for build, what in images:
        t = time.monotonic()
        say(f"docker image {build(client)} ({what}): ready ({time.monotonic() - t:.1f} s)")
    return tags
