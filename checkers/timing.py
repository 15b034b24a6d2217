"""Stage timings for profiling the checker (``harness.bench.checker`` reports them).

``laps("name")`` records wall and CPU seconds since the previous lap when enabled
(``laps.enable()``, or the environment variable ``EOSC_LAPS=1``, which also prints each lap to
stderr); disabled, it costs one attribute test.
"""

from __future__ import annotations

import os
import resource
import sys
import time


def rss_now() -> int:
    """This process's resident set size in bytes (/proc/self/statm; 0 where unknown)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Laps:
    def __init__(self) -> None:
        self.on = bool(os.environ.get("EOSC_LAPS"))
        self.echo = self.on
        self.records: list[dict] = []
        self._t = (time.perf_counter(), time.process_time())
        self._f, self._s = 0, 0.0

    def enable(self, echo: bool = False) -> None:
        self.on, self.echo = True, echo or bool(os.environ.get("EOSC_LAPS"))
        self.records = []
        self.reset()

    def reset(self) -> None:
        self._t = (time.perf_counter(), time.process_time())
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self._f, self._s = ru.ru_minflt, ru.ru_stime

    def __call__(self, name: str) -> None:
        if not self.on:
            return
        w, c = time.perf_counter(), time.process_time()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        rec = {"stage": name, "wall_s": round(w - self._t[0], 3), "cpu_s": round(c - self._t[1], 3),
               "rss_gib": round(rss_now() / 2**30, 2),
               "rss_peak_gib": round(ru.ru_maxrss / 2**20, 2),
               "page_faults": ru.ru_minflt - self._f,
               "sys_s": round(ru.ru_stime - self._s, 3)}
        self.records.append(rec)
        if self.echo:
            print(f"  {name:34s} wall {rec['wall_s']:6.2f}  cpu {rec['cpu_s']:6.2f}  "
                  f"rss {rec['rss_gib']:.2f} peak {rec['rss_peak_gib']:.2f} GiB  faults {rec['page_faults']} sys {rec['sys_s']:.2f}", file=sys.stderr, flush=True)
        self._t = (w, c)
        self._f, self._s = ru.ru_minflt, ru.ru_stime


laps = Laps()
