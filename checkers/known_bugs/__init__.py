"""The catalogue of known upstream bugs (docs/known-bugs.md): ``bugs`` (the catalogue and the
assignment of a verdict's anomalies to bugs), ``signatures`` (what each bug's cases look like)
and ``facts`` (the facts of a run the signatures ask: versions, faults, workload)."""
