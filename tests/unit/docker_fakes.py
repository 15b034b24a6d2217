"""A stand-in docker-py client for unit tests of what the harness asks Docker to create
(pure code: the arguments, never a container)."""
from __future__ import annotations


def fake_docker_client():
    """A client whose ``containers.create(image, **kw)`` keeps ``kw`` (``client.containers.kw``)
    and whose volumes and endpoint configs are no-ops."""
    class Containers:
        kw: dict = {}

        def create(self, image, **kw):
            Containers.kw = kw
            return object()

    class Client:
        containers = Containers()

        class volumes:
            @staticmethod
            def create(*a, **k):
                return None

        class api:
            @staticmethod
            def create_endpoint_config(**kw):
                return kw

    return Client()
