"""What vLLM's chat stream costs per chunk on each parser's deltas (issue 13). Prints figures.

    .venv-vllm/bin/python scripts/measure_chunk_cost.py [--tokens 8192] [--repeat 5]

The question: does our adapter make vLLM's own serving code work more than vLLM's built-in
parser does (objects built per step, deltas that could be merged, repeated serialisation)?
Both parsers are driven as vLLM's chat server drives them (``bench_workers.VllmDriver``: the
parser classes vLLM composes, one ``parse_delta`` per one-token step), on the benchmark's
streams (``bench_server.build_streams``), and after each step that shows something the work
vLLM's ``chat_completion_stream_generator`` does with the delta runs:
``ChatCompletionResponseStreamChoice``, ``maybe_filter_parallel_tool_calls``,
``ChatCompletionStreamResponse`` and ``model_dump_json(exclude_unset=True)``, as vLLM 0.32's
function calls them (0.33 builds the same objects and filters the delta in its
``ChatStreamProcessor``). The two parts are timed apart in every step (the clock reads count
alike for both parsers), so garbage and caches are as the server has them. It also prints how
many chunks each parser yields and whether their JSON is the same byte for byte (call ids,
which vLLM draws at random, masked). Not a test: no timing is asserted anywhere.
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


def stream(driver: Any, ids: list[int]) -> tuple[float, float, list[str]]:
    """One request as vLLM's chat stream serves it, one token per step: ``parse_delta``,
    then, for a step that shows something, vLLM's per-chunk lines (those of vLLM 0.32's
    ``chat_completion_stream_generator`` for a choice still running). Returns the seconds
    spent in each part and the chunks' JSON."""
    from vllm.entrypoints.openai.chat_completion.protocol import (
        ChatCompletionResponseStreamChoice,
        ChatCompletionStreamResponse,
    )
    from vllm.entrypoints.serve.utils.tool_calls_utils import maybe_filter_parallel_tool_calls

    parser = driver._parser()
    request = driver.chat_request
    decode = driver.tokenizer.decode
    texts = [decode([token], skip_special_tokens=True) for token in ids]
    clock = time.perf_counter
    last = len(ids) - 1
    parse_s = chunk_s = 0.0
    chunks = []
    for i, token in enumerate(ids):
        start = clock()
        delta = parser.parse_delta(texts[i], [token], request, None, finished=i == last)
        parsed = clock()
        if delta is not None:
            choice = ChatCompletionResponseStreamChoice(
                index=0, delta=delta, logprobs=None, finish_reason=None, token_ids=None)
            choice = maybe_filter_parallel_tool_calls(choice, request)
            chunk = ChatCompletionStreamResponse(
                id="chatcmpl-1", object="chat.completion.chunk", created=0, choices=[choice],
                model="gpt-oss")
            chunks.append(chunk.model_dump_json(exclude_unset=True))
        parse_s += parsed - start
        chunk_s += clock() - parsed
    return parse_s, chunk_s, chunks


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
          "token per step; us per token, best of "
          f"{args.repeat}, in parse_delta and in vLLM's work on the chunks it returned")
    print(f"{'shape':10} {'parser':12} {'parse':>7} {'vLLM chunks':>15} {'chunks':>7} "
          f"{'bytes/chunk':>12}  same JSON as the built-in's")
    for (shape, _), ids in streams.items():
        reference: list[str] = []
        for name, driver in drivers.items():
            runs = [stream(driver, ids) for _ in range(args.repeat)]
            parse_us = min(r[0] for r in runs) / len(ids) * 1e6
            chunk_us = min(r[1] for r in runs) / len(ids) * 1e6
            chunks = runs[0][2]
            masked = [_CALL_ID.sub('"id":"-"', c) for c in chunks]
            same = "-" if not reference else ("yes" if masked == reference else "NO")
            reference = reference or masked
            size = sum(map(len, chunks)) / len(chunks)
            print(f"{shape:10} {name:12} {parse_us:7.2f} {chunk_us:15.2f} {len(chunks):7d} "
                  f"{size:12.1f}  {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
