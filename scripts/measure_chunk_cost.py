"""What vLLM's chat stream costs per chunk on each parser's deltas (issue 13). Prints figures.

    .venv-vllm/bin/python scripts/measure_chunk_cost.py [--tokens 8192] [--repeat 5]

The question: does our adapter make vLLM's own serving code work more than vLLM's built-in
parser does (objects built per step, deltas that could be merged, repeated serialisation)?
Both parsers are driven as vLLM's chat server drives them (``bench_workers.VllmDriver``: the
parser classes vLLM composes, one ``parse_delta`` per one-token step), on the benchmark's
streams (``bench_server.build_streams``), and each step's ``DeltaMessage`` is kept. Then the
work vLLM's ``chat_completion_stream_generator`` does with a delta after ``parse_delta``
returns is timed over each list: ``ChatCompletionResponseStreamChoice``,
``maybe_filter_parallel_tool_calls``, ``ChatCompletionStreamResponse`` and
``model_dump_json(exclude_unset=True)``, as vLLM 0.32's function calls them (0.33 builds the
same objects and filters the delta in its ``ChatStreamProcessor``). It also prints how many
chunks each parser yields and whether their JSON is the same byte for byte (call ids, which
vLLM draws at random, masked). Not a test: no timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import bench_server  # noqa: E402
import bench_workers  # noqa: E402

_CALL_ID = re.compile(r'"id":"[^"]*"')


def deltas_of(driver: Any, ids: list[int]) -> list[Any]:
    """The DeltaMessage of every step that shows something (vLLM skips the others)."""
    parser = driver._parser()
    decode = driver.tokenizer.decode
    last = len(ids) - 1
    out = []
    for i, token in enumerate(ids):
        delta = parser.parse_delta(decode([token], skip_special_tokens=True), [token],
                                   driver.chat_request, None, finished=i == last)
        if delta is not None:
            out.append(delta)
    return out


def chunk_work(deltas: list[Any], request: Any) -> list[str]:
    """vLLM 0.32/0.33's per-chunk lines after ``parse_delta``, for a choice still running."""
    from vllm.entrypoints.openai.chat_completion.protocol import (
        ChatCompletionResponseStreamChoice,
        ChatCompletionStreamResponse,
    )
    from vllm.entrypoints.serve.utils.tool_calls_utils import maybe_filter_parallel_tool_calls

    out = []
    for delta in deltas:
        choice = ChatCompletionResponseStreamChoice(index=0, delta=delta, logprobs=None,
                                                    finish_reason=None, token_ids=None)
        choice = maybe_filter_parallel_tool_calls(choice, request)
        chunk = ChatCompletionStreamResponse(id="chatcmpl-1", object="chat.completion.chunk",
                                             created=0, choices=[choice], model="gpt-oss")
        out.append(chunk.model_dump_json(exclude_unset=True))
    return out


def best_us(fn: Any, n: int, repeat: int) -> float:
    """The fastest of ``repeat`` runs, in microseconds per item (thread CPU time)."""
    times = []
    for _ in range(repeat):
        t = time.thread_time()
        fn()
        times.append(time.thread_time() - t)
    return min(times) / n * 1e6


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=8192, help="output tokens per stream")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()

    tools = [bench_server.WRITE_FILE]
    drivers = {"builtin": bench_workers.VllmDriver(tools, ours=False),
               "harmony-ext": bench_workers.VllmDriver(tools, ours=True)}
    streams = bench_server.build_streams(list(bench_server.SHAPES), [args.tokens])
    print(f"vLLM {drivers['builtin'].versions['vllm']}; {args.tokens} tokens per stream, one "
          "token per step; vLLM's per-chunk work after parse_delta, best of "
          f"{args.repeat}, thread CPU time")
    print(f"{'shape':10} {'parser':12} {'chunks':>7} {'us/chunk':>9} {'bytes/chunk':>12}  "
          "same JSON as the built-in's")
    for (shape, _), ids in streams.items():
        reference: list[str] = []
        for name, driver in drivers.items():
            deltas = deltas_of(driver, ids)
            request = driver.chat_request
            chunks = chunk_work(deltas, request)
            cost = best_us(lambda d=deltas, r=request: chunk_work(d, r), len(deltas),
                           args.repeat)
            masked = [_CALL_ID.sub('"id":"-"', c) for c in chunks]
            same = "-" if not reference else ("yes" if masked == reference else "NO")
            reference = reference or masked
            size = sum(map(len, chunks)) / len(chunks)
            print(f"{shape:10} {name:12} {len(chunks):7d} {cost:9.2f} {size:12.1f}  {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
