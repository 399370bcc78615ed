"""Per-token cost of harmony-ext's core parser against openai_harmony.StreamableParser.

Both are fed the same o200k_harmony token stream (long reasoning, then a final answer), at
several output lengths, one token and eight tokens per delta, and the figures are printed
side by side. Each parser does what a server needs per delta: ours returns the new events;
openai_harmony's is asked for the new content delta after each token (it has no batch call).

Usage: python scripts/bench_core.py [--lengths 1000,16000,64000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from harmony_plugins import StreamParser, Vocab
from harmony_plugins.o200k import tiktoken_encoding

TEXT = ("the model considers each constraint carefully, weighing costs and benefits; "
        "then it writes code: def f(x): return x * 2  # 😀 数据 données\n")
WORDS = TEXT.split()


def token_stream(n: int) -> list[int]:
    """About n tokens: reasoning (3/4) then a final answer (1/4), as gpt-oss writes them."""
    enc = tiktoken_encoding()
    words = [WORDS[i % len(WORDS)] for i in range(n)]
    body = enc.encode_ordinary(" ".join(words))
    reasoning, final = body[: n * 3 // 4], body[n * 3 // 4 : n]
    head = enc.encode("<|channel|>analysis<|message|>", allowed_special="all")
    mid = enc.encode("<|end|><|start|>assistant<|channel|>final<|message|>",
                     allowed_special="all")
    tail = enc.encode("<|return|>", allowed_special="all")
    return head + reasoning + mid + final + tail


def deltas(ids: list[int], size: int) -> list[list[int]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def run_ours(chunks: list[list[int]]) -> float:
    start = time.perf_counter()
    parser = StreamParser()
    feed = parser.feed_ids
    for chunk in chunks:
        feed(chunk)
    parser.close()
    return time.perf_counter() - start


def run_openai_harmony(chunks: list[list[int]]) -> float:
    import openai_harmony as oh

    encoding = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    start = time.perf_counter()
    parser = oh.StreamableParser(encoding, role=oh.Role.ASSISTANT)
    for chunk in chunks:
        for token in chunk:
            parser.process(token)
            parser.last_content_delta  # noqa: B018 - what a server reads per token
            parser.current_channel  # noqa: B018
    parser.process_eos()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="1000,16000,64000")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    Vocab.o200k_harmony()  # built once per process, outside the timings
    try:
        import openai_harmony  # noqa: F401

        theirs = run_openai_harmony
    except ImportError:
        theirs = None
        print("openai_harmony is not installed: its column is skipped")
    print(f"{'tokens':>8} {'per delta':>9} {'ours us/token':>14} {'openai_harmony':>15} "
          f"{'ratio':>7}")
    for n in (int(x) for x in args.lengths.split(",")):
        ids = token_stream(n)
        for size in (1, 8):
            chunks = deltas(ids, size)
            ours = statistics.median(run_ours(chunks) for _ in range(args.repeats))
            ours_us = ours / len(ids) * 1e6
            if theirs is None:
                print(f"{len(ids):>8} {size:>9} {ours_us:>14.3f} {'skipped':>15}")
                continue
            other = statistics.median(theirs(chunks) for _ in range(args.repeats))
            other_us = other / len(ids) * 1e6
            print(f"{len(ids):>8} {size:>9} {ours_us:>14.3f} {other_us:>15.3f} "
                  f"{ours_us / other_us:>7.2f}")


if __name__ == "__main__":
    main()
