"""Faults. Each nemesis is a small object with ``setup``, ``invoke(op) -> completed op``,
``teardown`` (heals everything it may have done) and ``fs()`` naming the ops it handles.
Targeting and schedules are pure data (nemesis.schedule), kept apart from the side effects.
The nemesis sees the cluster only through the NodeControl protocol (nemesis.core)."""
