"""The one timing rule every benchmark here uses: the median wall time of several runs."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], runs: int) -> float:
    """Seconds: the median of `runs` calls of `fn`, each timed on its own."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
