"""The API server's CPU time inside ``HarmonyParser.parse_delta`` (benchmarks only).

``scripts/bench_server.py`` asks what share of a vLLM API server's CPU goes to parsing,
for vLLM's own gpt-oss parsers and for ours alike. vLLM's chat stream calls
``parse_delta`` on its ``HarmonyParser`` (built-in) or on our subclass of it once per
decode step per request, on the event-loop thread, so the thread CPU time spent inside
that call is the parser's cost, whoever's parser it is.

Reading a thread's CPU clock is a system call, which costs more than our whole parse of a
token, so the meter times one call in ``every`` on average (``HARMONY_EXT_PARSE_METER_EVERY``,
default 16), counting every call, and the benchmark scales the timed total by calls / timed
calls. The gap to the next timed call is drawn at random (1 to 2 * every - 1): with a fixed
gap, at a concurrency that divides it, every timed call fell on the same request's turn in
each decode step (the first after the loop woke, with the coldest caches), and the scaled
figure disagreed with the CPU sampler by up to 3x.

Installed by :mod:`vllm_ext.scripted` (loaded only when named on a test or benchmark
server's command line) when ``HARMONY_EXT_PARSE_METER`` names a 24-byte file: the running
totals are kept there as three little-endian uint64 (CPU ns of the timed calls, timed
calls, all calls), which the benchmark reads from outside the process before and after
each batch. A setup failure is logged and leaves the server unmetered, never down.
"""

from __future__ import annotations

import logging
import mmap
import random
import struct
import time
from typing import Any

logger = logging.getLogger("vllm.harmony_ext")

ENV = "HARMONY_EXT_PARSE_METER"
EVERY_ENV = "HARMONY_EXT_PARSE_METER_EVERY"
LAYOUT = struct.Struct("<QQQ")  # CPU ns of the timed calls, timed calls, all calls


def read(path: str) -> tuple[int, int, int]:
    """The totals in a meter file: (CPU ns of the timed calls, timed calls, all calls)."""
    with open(path, "rb") as f:
        return LAYOUT.unpack(f.read(LAYOUT.size))


def install(path: str, every: int = 16) -> bool:
    """Time one in ``every`` ``parse_delta`` calls on average, at random, of every
    ``HarmonyParser`` built from now on (all of them with ``every=1``), and count them all."""
    try:
        from vllm.parser.harmony import HarmonyParser

        with open(path, "r+b") as f:
            view = mmap.mmap(f.fileno(), LAYOUT.size)
    except Exception:
        logger.exception("parse meter: not installed (%s=%s)", ENV, path)
        return False
    every = max(1, every)
    gap = random.Random().randint  # its own generator: the server's stays untouched
    totals = [0, 0, 0]
    next_timed = [gap(1, 2 * every - 1)]  # the call count at which to time next
    clock = time.thread_time_ns
    # Each timed interval holds about one clock read's worth of the system call, which is
    # taken off (the fastest of many back-to-back reads).
    cost = min(-clock() + clock() for _ in range(1000))
    pack = LAYOUT.pack_into
    built = HarmonyParser.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        built(self, *args, **kwargs)
        inner = self.parse_delta  # the subclass's own, for our parser

        def parse_delta(*a: Any, **kw: Any) -> Any:
            totals[2] += 1
            if totals[2] != next_timed[0]:
                return inner(*a, **kw)
            next_timed[0] += gap(1, 2 * every - 1)
            start = clock()
            try:
                return inner(*a, **kw)
            finally:
                totals[0] += max(0, clock() - start - cost)
                totals[1] += 1
                pack(view, 0, *totals)

        self.parse_delta = parse_delta

    HarmonyParser.__init__ = __init__
    logger.info("parse meter: timing one HarmonyParser.parse_delta call in %d (random gaps) "
                "into %s "
                "(clock read %d ns)", every, path, cost)
    return True
