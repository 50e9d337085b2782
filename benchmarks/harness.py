"""Side-by-side timing on a shared, noisy machine (the technique of STYLE.md section 10).

Contenders are interleaved (A, B, A, B, ...) so they share the same noise; each sample runs an
inner loop calibrated to >= 0.2 s, after a tenth as many untimed calls; samples during which
*other* processes used more than ~0.1 CPU are retried (bounded) and counted.

The untimed lead-in exists because a contender's thread pool keeps spinning after its last call:
measured here, torch's OpenMP workers slow the next ~15 ms of another runtime's 2-thread
reductions by 10-30% (a 1.4 ms sum(-1) ran 1.6-1.9 ms for its first ten calls), and the first
calls after a pause run slower for both. Timed from a cold switch, whichever contender runs
second pays for the first one's pool. Results report best and median seconds per call.
"""

from __future__ import annotations

import mmap
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MIN_SAMPLE_S = 0.2
FOREIGN_CPU_LIMIT = 0.1
MAX_RETRIES = 5


def _cpu_busy_s() -> float:
    """Busy CPU-seconds of the whole machine so far (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


@dataclass
class Timing:
    name: str
    samples: list[float] = field(default_factory=list)  # seconds per call
    retried: int = 0
    dirty: int = 0

    @property
    def best(self) -> float:
        return min(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def _calibrate(fn: Callable[[], object]) -> int:
    """Calls per sample so that one sample lasts >= MIN_SAMPLE_S."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= MIN_SAMPLE_S:
            return n
        n = max(2 * n, int(n * MIN_SAMPLE_S / max(dt, 1e-9) * 1.1))


def _sample(fn: Callable[[], object], n: int, t: Timing) -> None:
    for attempt in range(MAX_RETRIES + 1):
        for _ in range(max(1, n // 10)):  # also after a retry's pause
            fn()
        busy0, own0, t0 = _cpu_busy_s(), _own_cpu_s(), time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        foreign = (_cpu_busy_s() - busy0) - (_own_cpu_s() - own0)
        if foreign / dt <= FOREIGN_CPU_LIMIT or attempt == MAX_RETRIES:
            if foreign / dt > FOREIGN_CPU_LIMIT:
                t.dirty += 1
            t.samples.append(dt / n)
            return
        t.retried += 1
        time.sleep(0.05)


def compare(contenders: dict[str, Callable[[], object]], samples: int = 7) -> dict[str, Timing]:
    """Time every contender, interleaved; returns name -> Timing (seconds per call)."""
    for fn in contenders.values():  # warm up
        fn()
    counts = {name: _calibrate(fn) for name, fn in contenders.items()}
    results = {name: Timing(name) for name in contenders}
    for _ in range(samples):
        for name, fn in contenders.items():
            _sample(fn, counts[name], results[name])
    return results


def noise_note(results: dict[str, Timing]) -> str:
    retried = sum(t.retried for t in results.values())
    dirty = sum(t.dirty for t in results.values())
    return f"(samples retried for foreign load: {retried}, kept dirty: {dirty})"


def read_bandwidth(threads: int, nbytes: int = 1 << 30, reps: int = 5) -> float:
    """Bytes/s of a streaming read at `threads` threads: the best of torch's and magnetron's sums over
    one float32 buffer larger than any cache, best of `reps` each (STREAM-style; the bound that
    weight-streaming GEMV and decode are held to).

    The buffer asks the OS for 2 MiB pages, as magnetron's allocator and its .mag mappings do: the
    machine's best streaming read (measured on one machine 25-26 GB/s, where torch's own 4 KiB-page
    buffers read 17-20). Two readers because neither is the machine's best everywhere: torch reads
    one stream per thread, magnetron's sum two (on Zen 3 it reads 25 GB/s on one core where torch's
    reads 20-22); a probe below what a kernel reaches would make that kernel's bound generous.
    """
    import magnetron as mag
    import torch

    torch.set_num_threads(threads)
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    buf = mmap.mmap(-1, nbytes, flags=flags) if flags else mmap.mmap(-1, nbytes)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        buf.madvise(mmap.MADV_HUGEPAGE)
    x = torch.frombuffer(buf, dtype=torch.float32)
    x.fill_(1.0)
    shared = mag.Tensor.from_dlpack(x)  # the same pages, not a copy
    previous_threads = mag.context.num_threads
    mag.context.num_threads = threads
    best = float("inf")
    for read in (x.sum, shared.sum):  # both run eagerly
        for _ in range(reps):
            t0 = time.perf_counter()
            read()
            best = min(best, time.perf_counter() - t0)
    mag.context.num_threads = previous_threads
    del x, shared, read  # the mapping closes once nothing views it
    return nbytes / best
