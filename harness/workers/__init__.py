"""Client workers: each runs as its own OS process in the client namespace.

A worker is started as ``python -m harness.workers ROLE CONFIG_JSON`` by harness.run.pool. It writes
one JSON object per line on stdout: history events (``{"proc": k, "type": ..., "f": ...,
"value": ..., "time": ns, ...}``, where ``proc`` numbers the worker's successive client
instances and the controller maps it to a history process) or control messages
(``{"ctl": ...}``). It reads ``stop`` lines on stdin and also stops when stdin closes, so
that a worker never outlives its controller.
"""
