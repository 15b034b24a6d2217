"""One run: scenario models, the run loop, the worker pool, the history writer and the versions
recorded with the run (scenario -> cluster and clients -> history -> verdict -> report)."""
