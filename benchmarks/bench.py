"""Per-token cost of harmony-ext's parsers against the ones they replace, on the same streams.

    python -m benchmarks.bench core     # the core (ids, text) against openai_harmony
    python -m benchmarks.bench vllm     # in .venv-vllm: vLLM's built-in parser against ours
    python -m benchmarks.bench sglang   # in .venv-sglang: SGLang's built-in against ours

(``bash benchmarks/run.sh NAME`` picks the venv and writes ``docs/bench-NAME.md``; ``python -m
benchmarks.compat_feedback`` times the drop-in parser on a tool's result fed back.) Every
implementation parses the same streams (``benchmarks.common``) at each length, 1 and 8 tokens
per delta, through its engine's real classes; the figures are printed side by side, with how
each grows from the shortest stream to the longest (flat: about 1x), and a cross-check that
every implementation parses each stream to the same message. The exit status is 1 when the
cross-check finds a difference; no timing is ever judged.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from typing import Any

from benchmarks.common import SHAPES, TOOLS, K, cpu_us_per_token, differences, fmt, page
from benchmarks.common import streams as build_streams
from benchmarks.drivers import (
    CoreDriver,
    Driver,
    OpenAIHarmonyDriver,
    SglangDriver,
    Skip,
    VllmDriver,
)

# name -> (what it answers, [ours, theirs, the core alone], default shapes and lengths)
SUITES: dict[str, tuple[str, list[Any], dict[str, Any]]] = {
    "core": ("harmony-ext's core against openai_harmony",
             [partial(CoreDriver, mode="ids"), OpenAIHarmonyDriver,
              partial(CoreDriver, mode="text")],
             {"shapes": "reasoning,call", "lengths": "1k,16k,64k"}),
    "vllm": ("harmony-ext's vLLM adapter against vLLM's built-in Harmony parser",
             [partial(VllmDriver, ours=True), partial(VllmDriver, ours=False),
              partial(CoreDriver, mode="ids")],
             {"shapes": ",".join(SHAPES), "lengths": "1k,4k,16k"}),
    "sglang": ("harmony-ext's SGLang adapter against SGLang's built-in gpt-oss parsers",
               [partial(SglangDriver, ours=True), partial(SglangDriver, ours=False),
                partial(CoreDriver, mode="text")],
               {"shapes": ",".join(SHAPES), "lengths": "1k,4k,16k"}),
}
SIZES = (1, 8)
SMOKE = {"lengths": "300", "repeats": 1}  # and no minimum of CPU time per cell


def lengths(text: str) -> list[int]:
    return [int(x[:-1]) * K if x.endswith("k") else int(x) for x in text.split(",")]


def label(n: int) -> str:
    return f"{n // K}k" if n % K == 0 else str(n)


def measure(drivers: list[Driver], data: dict, shapes: list[str], ns: list[int],
            repeats: int, min_cpu_s: float) -> dict[tuple[str, str, int, int], float]:
    """us/token per (driver, shape, size, n); the drivers take turns on each cell, so that
    a slow spell of a shared machine falls on all of them alike."""
    cost = {}
    for shape in shapes:
        for size in SIZES:
            for n in ns:
                stream = data[shape, n]
                for d in drivers:
                    deltas = d.prepare(stream, size)
                    cost[d.name, shape, size, n] = cpu_us_per_token(
                        partial(d.run, deltas), len(stream["ids"]), repeats, min_cpu_s)
                print(f"  {shape} {label(n)} {size}/delta: " + ", ".join(
                    f"{d.name} {fmt(cost[d.name, shape, size, n])}" for d in drivers),
                    file=sys.stderr, flush=True)
    return cost


def cost_tables(drivers: list[Driver], cost: dict, data: dict, shapes: list[str],
                ns: list[int]) -> list[str]:
    ours, theirs = drivers[0].name, drivers[1].name
    out = []
    for shape in shapes:
        tokens = ", ".join(f"{len(data[shape, n]['ids']):,}" for n in ns)
        out += [f"### {shape}: {SHAPES[shape]}", "", f"Tokens per stream: {tokens}.", "",
                "| implementation | per delta | " + " | ".join(label(n) for n in ns)
                + f" | {label(ns[-1])} / {label(ns[0])} |",
                "|---|---:|" + "---:|" * (len(ns) + 1)]
        for size in SIZES:
            for d in drivers:
                row = [cost[d.name, shape, size, n] for n in ns]
                out.append(f"| {d.name} | {size} | " + " | ".join(fmt(x) for x in row)
                           + f" | {row[-1] / row[0]:.2f}x |")
        for size in SIZES:
            out.append(f"| **{theirs} / {ours}** | {size} | " + " | ".join(
                f"**{cost[theirs, shape, size, n] / cost[ours, shape, size, n]:.1f}x**"
                for n in ns) + " | |")
        out.append("")
    return out


def cross_check(drivers: list[Driver], data: dict, shapes: list[str], n: int
                ) -> tuple[list[str], int]:
    """Every implementation against the first, on each shape's shortest stream, both delta
    sizes. Returns the table and how many pairs differ."""
    ref = drivers[0]
    rows, bad = [], 0
    for shape in shapes:
        for size in SIZES:
            want = ref.collect(ref.prepare(data[shape, n], size))
            for d in drivers[1:]:
                try:
                    diff = differences(want, d.collect(d.prepare(data[shape, n], size)))
                except Exception as e:  # a parser that crashes is a finding too
                    diff = [f"raised {type(e).__name__}: {e}"]
                bad += bool(diff)
                rows.append(f"| {shape}, {size}/delta | {d.name} / {ref.name} | "
                            + ("same message" if not diff else
                               "**DIFFERENT**: " + ", ".join(diff)) + " |")
    head = ["## Cross-check", "",
            f"Each stream of {label(n)} tokens parsed to a message (reasoning, content, calls "
            "with arguments compared as JSON values), streamed as in the timed runs.", "",
            "| stream | pair | result |", "|---|---|---|"]
    return head + rows + [""], bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", choices=sorted(SUITES))
    ap.add_argument("--shapes", help=f"comma-separated, of {','.join(SHAPES)}")
    ap.add_argument("--lengths", help="comma-separated token counts (1k = 1024)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per cell (median)")
    ap.add_argument("--smoke", action="store_true", help="one tiny run of every cell")
    ap.add_argument("--out", help="write the result page there (default: stdout only)")
    ap.add_argument("--command", default="", help="the command to name on the page")
    args = ap.parse_args(argv)
    what, factories, defaults = SUITES[args.suite]
    shapes = (args.shapes or defaults["shapes"]).split(",")
    ns = lengths(SMOKE["lengths"] if args.smoke else args.lengths or defaults["lengths"])
    repeats = SMOKE["repeats"] if args.smoke else args.repeats
    started = time.monotonic()
    try:
        drivers = [make(TOOLS) for make in factories]
    except Skip as e:
        print(f"{args.suite}: skipped, engine {e}", file=sys.stderr)
        return 2
    data = build_streams(shapes, ns)
    checks, bad = cross_check(drivers, data, shapes, ns[0])
    cost = measure(drivers, data, shapes, ns, repeats, 0.0 if args.smoke else 0.3)
    versions = {k: v for d in drivers for k, v in d.versions.items()}
    intro = ("CPU microseconds per generated token for one whole request (parser "
             f"built, every delta fed, end of stream), median of at least {repeats} runs "
             "(more for short streams, up to 0.3 s of CPU) after a warm-up; the last column "
             "is how the cost grows from the shortest stream to the longest (flat: about "
             "1x); a bold row is the other parser's cost over ours "
             f"(above 1x: ours is cheaper). Shapes: {', '.join(shapes)}; whole run "
             f"{time.monotonic() - started:.0f} s.")
    command = args.command or f"python -m benchmarks.bench {' '.join(argv or sys.argv[1:])}"
    text = page(f"Benchmark: {what}", command, intro, versions,
                ["## Per-token cost", "", *cost_tables(drivers, cost, data, shapes, ns),
                 *checks])
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if bad:
        print(f"cross-check: {bad} implementation(s) parsed a stream differently",
              file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
