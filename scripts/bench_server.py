"""What the Harmony parser costs a real vLLM API server under streaming load.

Starts real vLLM OpenAI servers (the tiny random gpt-oss model of
``scripts/vllm_tiny_server.sh``, on the CPU) in three configurations:

- ``none``: no ``--tool-call-parser`` / ``--reasoning-parser``. NOT a server without parsing:
  vLLM 0.32 still selects its built-in ``openai_gptoss`` reasoning parser for a gpt_oss model
  (the output is split into reasoning and content), but surfaces no tool calls (the call's
  arguments go nowhere),
- ``builtin``: vLLM's own gpt-oss parsers (``openai`` / ``openai_gptoss``),
- ``harmony-ext``: ours (``harmony-ext`` / ``harmony-ext``),

and sends them the same scripted load: every request's output is forced token by token
(``vllm_ext.scripted``) to an o200k_harmony token stream built by ``scripts/bench.py``'s
``build_stream`` (``reasoning``: long reasoning then a 160-token final answer; ``call``:
reasoning for a quarter, then one ``write_file`` call whose arguments are the rest, a coding
agent's call). For every cell (shape x output length x concurrency) each configuration gets
the same batch (``concurrency`` streaming chat requests at once, repeated in waves until the
batch holds at least ``--min-tokens`` output tokens), repeats interleaved across the
configurations (the order rotates each repeat). Per batch:

- API-server CPU per streamed token: ``utime + stime`` of the API-server process only
  (``/proc/PID/stat``, its own threads, children such as the engine core excluded), read
  before and after the batch, divided by the output tokens streamed;
- time to first token (first chunk that carries a delta), inter-token latency p50/p99
  (gaps between successive chunks that carry a delta, pooled over the batch's requests),
  output tokens per second (all tokens / the batch's wall time).

Per cell the report gives each configuration's median over the repeats with its spread
(min-max) and a verdict, harmony-ext against each of the other two: "within noise" when the
two spreads overlap, otherwise the ratio of the medians. Cells that the time budget
(``--budget-minutes``) cannot hold, estimated from the throughput the earlier cells measured,
are listed as not run; nothing is extrapolated.

    bash scripts/bench_server.sh [--budget-minutes 110] [--lengths 1k,8k,32k]
        [--concurrency 1,8,32] [--shapes reasoning,call] [--repeats 3] [--out docs/bench-server.md]

(the wrapper sets up ``.venv-vllm``, which has the ``openai`` client, and matplotlib in
``.venv``, then runs this file with ``.venv-vllm/bin/python``). The defaults are the run that
wrote ``docs/bench-server.md``. Writes the report, its plot (``.png`` next to it; needs
matplotlib, else a message) and the raw results (``.json`` next to it; ``--plot-only
FILE.json`` redraws the plot from them with any Python that has matplotlib).

Two instruments explain the numbers, both loaded with ``vllm_ext.scripted`` in every
configuration alike: the parse meter (``vllm_ext/parse_meter.py``) times one in 16
``HarmonyParser.parse_delta`` calls on average, at random, vLLM's parser or ours, so each
batch also reports the parser's CPU per token and its share of the API server's CPU; and
after the measured cells, one extra batch per configuration in each ``--profile-cells``
cell runs with the API server's CPU-time sampler on (``vllm_ext/cpu_profile.py``), which
says where the rest goes (detokenization, pydantic, SSE serialisation, HTTP, engine IPC).
A wall-clock sampler such as py-spy is no use here: with every core busy it charges the
server for time spent waiting for a CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import math
import os
import platform
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

K = 1024
MODEL = "tiny-gpt-oss"
CONFIGS = {  # name -> (TOOL_PARSER, REASONING_PARSER, label)
    # vLLM 0.32 selects its openai_gptoss reasoning parser for a gpt_oss model even when no
    # flag names one (the server log's structured_outputs_config shows it), so this is not
    # "no parsing": it is vLLM's default, reasoning split by the built-in, calls not surfaced.
    "none": ("", "", "no parser flags: vLLM's default for gpt_oss, which still parses "
             "reasoning with its built-in openai_gptoss parser and surfaces no tool calls"),
    "builtin": ("openai", "openai_gptoss", "vLLM's built-in gpt-oss parsers"),
    "harmony-ext": ("harmony-ext", "harmony-ext", "harmony-ext"),
}
SHAPES = {
    "reasoning": "long reasoning, then a short final answer (160 tokens)",
    "call": "reasoning (1/4), then one write_file call whose arguments are the rest",
}
MESSAGES = [{"role": "user", "content": "Write the module we discussed to src/app/module.py."}]
WRITE_FILE = {"type": "function", "function": {
    "name": "write_file", "description": "Write a file in the workspace.",
    "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"]}}}
PROMPT_ROOM = 512  # tokens kept for the rendered prompt in --max-model-len
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(*args: Any) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *args, file=sys.stderr, flush=True)


def parse_lengths(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        out.append(int(float(part[:-1]) * K) if part.endswith("k") else int(part))
    return out


# -- the streams ---------------------------------------------------------------------------------

def load_bench_module() -> Any:
    """scripts/bench.py (the parser benchmark), for its stream builder."""
    spec = importlib.util.spec_from_file_location("harmony_bench", ROOT / "scripts" / "bench.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_streams(shapes: list[str], lengths: list[int]) -> dict[tuple[str, int], list[int]]:
    from harmony_plugins.o200k import o200k_base_pieces, tiktoken_encoding

    bench = load_bench_module()
    enc = tiktoken_encoding()
    pieces = o200k_base_pieces()
    streams = {}
    for shape in shapes:
        # The seed follows SHAPES' order, not the run's: a cell's stream is the same in a
        # run of that one cell (--cells) as in the full run.
        s_index = list(SHAPES).index(shape)
        for n in lengths:
            streams[shape, n] = bench.build_stream(enc, pieces, shape, n,
                                                   seed=1000 * s_index + n)
    return streams


# -- the servers -----------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process's own threads (children excluded), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def children(pid: int) -> list[str]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for kid in kids:
            with contextlib.suppress(OSError):
                out.append(f"{kid} {Path(f'/proc/{kid}/comm').read_text().strip()}")
    return out


class Server:
    def __init__(self, name: str, venv: Path, model_dir: Path, max_len: int, kv_gb: int,
                 logdir: Path, meter_every: int = 16, config: str | None = None) -> None:
        self.name, self.config = name, config or name
        self.port = free_port()
        tool, reasoning, _ = CONFIGS[self.config]
        # The parse meter (vllm_ext/parse_meter.py): CPU ns and calls of parse_delta.
        self.meter = logdir / f"parse-meter-{name}.bin"
        self.meter.write_bytes(bytes(24))
        meter = {"HARMONY_EXT_PARSE_METER": str(self.meter),
                 "HARMONY_EXT_PARSE_METER_EVERY": str(meter_every)} if meter_every else {}
        # The CPU-time sampler (vllm_ext/cpu_profile.py): SIGUSR1 starts it, SIGUSR1 writes.
        self.profile = logdir / f"cpu-profile-{name}.txt"
        env = dict(os.environ, TOOL_PARSER=tool, REASONING_PARSER=reasoning,
                   VENV_VLLM=str(venv), TINY_MODEL_DIR=str(model_dir),
                   VLLM_CPU_KVCACHE_SPACE=str(kv_gb), HARMONY_EXT_CPU_PROFILE=str(self.profile),
                   **meter)
        self.log_path = logdir / f"server-{name}.log"
        self.log_file = self.log_path.open("w")
        cmd = ["bash", str(ROOT / "scripts" / "vllm_tiny_server.sh"), str(self.port),
               "--max-model-len", str(max_len), "--disable-log-stats"]
        # The script execs Python: this pid is the API-server process itself.
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log_file,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid
        self.started = time.monotonic()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def parse_meter(self) -> tuple[int, int, int]:
        """The parse meter's totals: (CPU ns of the timed calls, timed calls, all calls)."""
        return struct.unpack("<QQQ", self.meter.read_bytes()[:24])

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            tail = self.log_path.read_text()[-3000:]
            raise RuntimeError(f"server {self.name} exited ({self.proc.returncode}):\n{tail}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log_file.close()


def wait_ready(servers: list[Server], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(servers)
    while pending:
        pending = [s for s in pending if not s.ready()]
        for s in servers:
            if s not in pending and not hasattr(s, "ready_after"):
                s.ready_after = time.monotonic() - s.started
                log(f"server {s.name} ready on port {s.port} (pid {s.pid}) after "
                    f"{s.ready_after:.0f} s; children: {', '.join(children(s.pid))}")
        if pending and time.monotonic() > deadline:
            raise RuntimeError(f"servers not ready after {timeout:.0f} s: "
                               f"{[s.name for s in pending]}")
        if pending:
            time.sleep(1)


# -- the load --------------------------------------------------------------------------------------

def request_args(config: str, shape: str, ids: list[int]) -> dict[str, Any]:
    args: dict[str, Any] = {
        "model": MODEL, "messages": MESSAGES, "stream": True, "max_tokens": len(ids) + 8,
        "stream_options": {"include_usage": True},
        "extra_body": {"vllm_xargs": {"script_ids": json.dumps(ids)}},
    }
    if shape == "call":
        args["tools"] = [WRITE_FILE]
        # Without a tool parser vLLM cannot serve tool_choice "auto".
        args["tool_choice"] = "none" if config == "none" else "auto"
    return args


async def one_request(client: Any, args: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    times: list[float] = []
    tokens = 0
    got = Counter()
    stream = await client.chat.completions.create(**args)
    async for chunk in stream:
        now = time.perf_counter()
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        extra = delta.model_extra or {}
        reasoning = extra.get("reasoning") or extra.get("reasoning_content")
        carried = False
        if delta.content:
            got["content"] += len(delta.content)
            carried = True
        if reasoning:
            got["reasoning"] += len(reasoning)
            carried = True
        for call in delta.tool_calls or ():
            if call.function is not None:
                got["arguments"] += len(call.function.arguments or "")
                carried = True
        if carried:
            times.append(now)
    end = time.perf_counter()
    return {"start": start, "end": end, "times": times, "tokens": tokens, "got": dict(got)}


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return math.nan
    k = (len(xs) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


async def run_batch(server: Server, shape: str, ids: list[int], conc: int,
                    waves: int) -> dict[str, Any]:
    from openai import AsyncOpenAI

    args = request_args(server.config, shape, ids)
    async with AsyncOpenAI(base_url=server.base_url, api_key="none", timeout=3600,
                           max_retries=0) as client:
        cpu0, parse0 = cpu_seconds(server.pid), server.parse_meter()
        t0 = time.perf_counter()
        results = []
        for _ in range(waves):
            results += await asyncio.gather(*(one_request(client, args) for _ in range(conc)))
        wall = time.perf_counter() - t0
        cpu1, parse1 = cpu_seconds(server.pid), server.parse_meter()
    tokens = sum(r["tokens"] for r in results)
    # The meter times one call in N: scale the timed calls' CPU to all calls.
    calls, timed = parse1[2] - parse0[2], parse1[1] - parse0[1]
    parse_s = (parse1[0] - parse0[0]) / 1e9 * calls / timed if timed else math.nan
    gaps = [b - a for r in results for a, b in zip(r["times"], r["times"][1:], strict=False)]
    ttfts = [r["times"][0] - r["start"] for r in results if r["times"]]
    got: Counter = Counter()
    for r in results:
        got.update(r["got"])
    return {
        "tokens": tokens, "expected_tokens": len(ids) * conc * waves, "requests": len(results),
        "wall_s": wall, "cpu_s": cpu1 - cpu0,
        "cpu_us_per_token": (cpu1 - cpu0) / tokens * 1e6 if tokens else math.nan,
        "parse_calls": calls, "parse_timed_calls": timed,
        "parse_us_per_token": parse_s / tokens * 1e6 if tokens else math.nan,
        "parse_share_pct": parse_s / (cpu1 - cpu0) * 100 if cpu1 > cpu0 else math.nan,
        "ttft_ms": statistics.median(ttfts) * 1e3 if ttfts else math.nan,
        "itl_p50_ms": percentile(gaps, 0.5) * 1e3, "itl_p99_ms": percentile(gaps, 0.99) * 1e3,
        "tokens_per_s": tokens / wall, "chunks": sum(len(r["times"]) for r in results),
        "got": dict(got),
    }


def idle_cpu(server: Server, seconds: float = 3.0) -> float:
    """The API server's CPU use while nothing is sent, in CPU-ms per second."""
    c0, t0 = cpu_seconds(server.pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(server.pid) - c0) / (time.monotonic() - t0) * 1e3


# -- the profile -----------------------------------------------------------------------------------

INSTRUMENTS = ("vllm_ext/parse_meter", "vllm_ext/cpu_profile", "vllm_ext/scripted")
CATEGORIES = [  # (category, substrings of a frame's "function (file:line)"), by priority
    # The benchmark's own instruments (the parse meter's bookkeeping around each call, the
    # scripted output's per-request set-up): found by the deepest frame, see categorise().
    ("benchmark instruments", INSTRUMENTS),
    # vLLM renders the prompt with openai_harmony, which the parser needles would catch.
    ("prompt rendering", ("render_for_completion", "render_conversation")),
    ("parser", ("harmony_plugins", "harmony_adapters", "vllm_ext", "vllm/parser/",
                "openai_harmony", "reasoning/gptoss", "tool_parsers/openai",
                "gptoss_reasoning")),
    ("detokenization", ("detokenizer", "tokenizers/", "tokenizer")),
    ("SSE serialisation", ("model_dump_json", "json/encoder", "json/__init__", "orjson")),
    ("pydantic (other)", ("pydantic",)),
    ("engine IPC (zmq, msgspec)", ("zmq", "msgspec", "msgpack", "core_client",
                                   "serial_utils")),
    ("output processing", ("output_processor", "v1/engine/", "outputs.py")),
    ("chat serving (other)", ("chat_completion/", "serving")),
    ("HTTP (uvicorn, starlette)", ("uvicorn", "starlette", "h11", "httptools", "fastapi",
                                   "anyio")),
    ("asyncio", ("asyncio",)),
]
_PARSER_NEEDLES = dict(CATEGORIES)["parser"]


def categorise(stack: list[str]) -> str:
    """The first category (in priority order) that any frame of the sample belongs to: a
    sample anywhere under the parser is the parser's, whatever it calls. The instruments
    wrap the parser (the meter is the caller of every ``parse_delta``), so a sample is
    theirs only when the deepest frame of the instruments or the parser is an instrument's."""
    deepest = next((f for f in reversed(stack)
                    if any(n in f for n in INSTRUMENTS + _PARSER_NEEDLES)), "")
    if any(n in deepest for n in INSTRUMENTS):
        return "benchmark instruments"
    for name, needles in CATEGORIES:
        if needles is not INSTRUMENTS and any(n in f for f in stack for n in needles):
            return name
    return "other"


def profile_batch(server: Server, shape: str, ids: list[int], conc: int, waves: int,
                  out: Path) -> dict[str, Any]:
    """One extra batch with the API server's CPU-time sampler on; samples per category."""
    server.profile.unlink(missing_ok=True)
    os.kill(server.pid, signal.SIGUSR1)  # start sampling
    batch = asyncio.run(run_batch(server, shape, ids, conc, waves))
    os.kill(server.pid, signal.SIGUSR1)  # stop, write
    deadline = time.monotonic() + 30
    while not server.profile.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    counts: Counter = Counter()
    raw = out / f"profile-{server.name}-{shape}-{len(ids)}-c{conc}.txt"
    if server.profile.exists():
        text = server.profile.read_text()
        lines = sorted(text.splitlines(), key=lambda x: -int(x.rpartition(" ")[2]))
        raw.write_text("\n".join(lines) + "\n")
        for line in lines:
            stack_text, _, n = line.rpartition(" ")
            counts[categorise(stack_text.split(";"))] += int(n)
    total = sum(counts.values())
    return {"batch": batch, "samples": total,
            "shares": {k: v / total for k, v in counts.most_common()} if total else {},
            "raw": raw.name}


# -- the run ---------------------------------------------------------------------------------------

def summarise(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def verdict(ours: dict[str, float], other: dict[str, float], lower_is_better: bool) -> str:
    if min(ours["n"], other["n"]) < 2:
        return "one repeat: no spread to judge by"
    if ours["min"] <= other["max"] and other["min"] <= ours["max"]:
        return "within noise"
    ratio = other["median"] / ours["median"] if lower_is_better else \
        ours["median"] / other["median"]
    better = ratio > 1
    return f"{'ours better' if better else 'ours worse'} ({ratio:.2f}x)"


METRICS = [  # key, label, lower is better, format
    ("cpu_us_per_token", "API-server CPU us/token", True, "{:.0f}"),
    ("parse_us_per_token", "parser CPU us/token (inside parse_delta)", True, "{:.1f}"),
    ("parse_share_pct", "parser share of the API server's CPU, %", True, "{:.0f}"),
    ("ttft_ms", "TTFT ms", True, "{:.0f}"),
    ("itl_p50_ms", "ITL p50 ms", True, "{:.1f}"),
    ("itl_p99_ms", "ITL p99 ms", True, "{:.1f}"),
    ("tokens_per_s", "tokens/s", False, "{:.0f}"),
]


def vllm_version(py: Path) -> str:
    code = ("from importlib.metadata import version, PackageNotFoundError\n"
            "for d in ('vllm', 'vllm-cpu'):\n"
            "    try:\n        print(d, version(d)); break\n"
            "    except PackageNotFoundError: pass")
    out = subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def machine() -> str:
    """The parser benchmark's machine facts, as one line."""
    m = load_bench_module().machine()
    return f"{m['cores']} CPUs ({m['cpu']}), Python {platform.python_version()}"


def fmt_cell(s: dict[str, float] | None, fmt: str) -> str:
    if s is None:
        return "-"
    return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}-{fmt.format(s['max'])})"


def summary(data: dict[str, Any]) -> list[str]:
    """The headline tables (the README copies them), cells in shape, length, concurrency
    order: the API server's CPU per token with harmony-ext's verdicts; then the parsers' CPU
    per token and share, and ITL p99 with harmony-ext's verdicts."""
    have = [c for c in ("none", "builtin", "harmony-ext") if c in data["configs"]]
    cells = sorted((c for c in data["cells"] if c["status"] == "ok"),
                   key=lambda c: (c["shape"], c["tokens"], c["concurrency"]))

    def verdicts(s: dict[str, Any], key: str) -> list[str]:
        return [verdict(s["harmony-ext"][key], s[o][key], True)
                if o in s and "harmony-ext" in s else "-" for o in ("builtin", "none")]

    def col(s: dict[str, Any], key: str, fmt: str) -> str:
        return "; ".join(fmt_cell(s[c].get(key), fmt) for c in have)

    names = ", ".join(have)
    cpu = ["| shape | tokens | conc. | API-server CPU us/token: " + names +
           " | ours vs builtin | ours vs none |", "|---|---:|---:|---|---|---|"]
    rest = ["| shape | tokens | conc. | parser us/token (share of the server's CPU): " + names +
            " | ITL p99 ms: " + names + " | ours vs builtin | ours vs none |",
            "|---|---:|---:|---|---|---|---|"]
    for cell in cells:
        s = cell["summary"]
        where = f"| {cell['shape']} | {cell['tokens']} | {cell['concurrency']} | "
        cpu.append(where + col(s, "cpu_us_per_token", "{:.0f}") + " | "
                   + " | ".join(verdicts(s, "cpu_us_per_token")) + " |")
        parse = "; ".join(
            f"{s[c]['parse_us_per_token']['median']:.1f} "
            f"({s[c]['parse_share_pct']['median']:.0f}%)" if "parse_us_per_token" in s[c]
            else "-" for c in have)
        rest.append(where + parse + " | " + col(s, "itl_p99_ms", "{:.1f}") + " | "
                    + " | ".join(verdicts(s, "itl_p99_ms")) + " |")
    return cpu + [""] + rest


def write_report(path: Path, data: dict[str, Any]) -> None:
    lines = [
        "# API-server cost of Harmony parsing under streaming load (vLLM)",
        "",
        f"Written by `scripts/bench_server.py` on {data['date']}, commit {data['commit']}, "
        f"vLLM {data['vllm']}; {data['machine']}. Command: `{data['command']}`; "
        f"wall time {data['wall_s'] / 60:.1f} min (budget {data['budget_minutes']} min).",
        "",
        "Servers: " + "; ".join(f"`{c}`: {CONFIGS[c][2]}" for c in data["configs"]) +
        f". The tiny random gpt-oss model on the CPU (`scripts/vllm_tiny_server.sh`, "
        f"`--max-model-len {data['max_model_len']}`), every output forced token by token "
        "to an o200k_harmony stream (`vllm_ext/scripted.py`, streams from `scripts/bench.py`'s "
        "`build_stream`). " + ("All servers ran at once; each batch went to one of them."
                               if data["together"] else "One server at a time."),
        "",
        "Shapes: " + "; ".join(f"`{s}`: {SHAPES[s]}" for s in data["shapes"]) + ".",
        "",
        "Per batch: `concurrency` streaming chat requests at once, in waves until the batch "
        f"holds at least {data['min_tokens']} output tokens. CPU is `utime + stime` of the "
        "API-server process only (`/proc/PID/stat`, 10 ms ticks; the engine core, a child "
        "process, is not counted), per output token streamed. TTFT: median over the batch's "
        "requests. ITL: gaps between successive chunks that carry a delta, pooled over the "
        "batch. Tokens/s: output tokens of the batch / its wall time. The client "
        "(`openai.AsyncOpenAI`) runs on the same CPUs. Each figure: the median over the "
        "repeats (the order of the configurations rotated each repeat), with min-max in "
        "brackets. Verdict: harmony-ext against the other configuration, 'within noise' "
        "when the two min-max ranges overlap, else the ratio of the medians.",
        "",
        "Idle API-server CPU (CPU-ms per second, nothing sent): " + ", ".join(
            f"{c} {v:.1f}" for c, v in data["idle_cpu_ms_per_s"].items()) + ".",
        "",
    ]
    lines += ["## Summary", "",
              "Medians of the repeats, min-max in brackets; parser: median CPU inside "
              "`parse_delta` per token (the parse meter) and its median share of the API "
              "server's CPU.", "", *summary(data), ""]
    for key, label, lower, fmt in METRICS:
        lines += [f"## {label}", "",
                  "| shape | tokens | concurrency | " + " | ".join(data["configs"]) +
                  " | vs builtin | vs none |",
                  "|---|---:|---:|" + "---:|" * len(data["configs"]) + "---|---|"]
        for cell in data["cells"]:
            if cell["status"] != "ok":
                continue
            s = cell["summary"]
            row = [cell["shape"], str(cell["tokens"]), str(cell["concurrency"])]
            row += [fmt_cell(s.get(c, {}).get(key), fmt) for c in data["configs"]]
            for other in ("builtin", "none"):
                if "harmony-ext" in s and other in s:
                    row.append(verdict(s["harmony-ext"][key], s[other][key], lower))
                else:
                    row.append("-")
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    not_run = [c for c in data["cells"] if c["status"] != "ok"]
    lines += ["## Cells not run", ""]
    if not_run:
        lines += [f"- {c['shape']}, {c['tokens']} tokens, concurrency {c['concurrency']}: "
                  f"{c['status']}" for c in not_run]
    else:
        lines.append("None.")
    lines.append("")
    checks = [c for c in data["cells"] if c["status"] == "ok"]
    lines += ["## What the clients received (last repeat, characters)", "",
              "| shape | tokens | concurrency | " + " | ".join(data["configs"]) + " |",
              "|---|---:|---:|" + "---|" * len(data["configs"])]
    for cell in checks:
        row = [cell["shape"], str(cell["tokens"]), str(cell["concurrency"])]
        for c in data["configs"]:
            runs = [r for r in cell["runs"] if r["config"] == c]
            got = runs[-1]["got"] if runs else {}
            row.append(", ".join(f"{k} {v}" for k, v in sorted(got.items())) or "-")
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "## Chunks streamed and parse_delta calls per batch (each repeat)", "",
              "A call of `parse_delta` is one output that vLLM handed the request's stream. "
              "When the API server has not yet taken a request's last output, vLLM merges the "
              "next decode step's tokens into it, so a server that falls behind gets fewer "
              "calls than tokens, and streams fewer chunks, each carrying more tokens. (The "
              "calls are the parse meter's count, which it writes at its timed calls only: "
              "read between batches, it can lag by up to twice `--meter-every` calls.)", "",
              "| shape | tokens | concurrency | tokens per batch | " +
              " | ".join(f"{c}: chunks / calls" for c in data["configs"]) + " |",
              "|---|---:|---:|---:|" + "---|" * len(data["configs"])]
    for cell in checks:
        row = [cell["shape"], str(cell["tokens"]), str(cell["concurrency"]),
               str(cell["runs"][0]["expected_tokens"])]
        for c in data["configs"]:
            row.append(", ".join(f"{r['chunks']} / {r.get('parse_calls', '-')}"
                                 for r in cell["runs"] if r["config"] == c) or "-")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for p in data.get("profiles", []):
        lines += [f"## Where the API server's CPU goes: {p['shape']}, {p['tokens']} tokens, "
                  f"concurrency {p['concurrency']}", ""]
        if p["status"] != "ok":
            lines += [p["status"], ""]
            continue
        res = p["results"]
        # A run from before a category existed has none of it: no row then, not a zero.
        seen = {cat for r in res.values() for cat in r["shares"]}
        instruments = ("; 'benchmark instruments' is the parse meter's bookkeeping around "
                       "each call and the scripted output's set-up"
                       if "benchmark instruments" in seen else
                       " (in this run, the benchmark's instruments and vLLM's prompt "
                       "rendering too)")
        lines += ["One extra batch per configuration with the API server's CPU-time sampler "
                  "on (`vllm_ext/cpu_profile.py`: a sample per millisecond of the process's "
                  "CPU, user and kernel, charged to the Python line running or calling into "
                  "C). Each sample goes to the first category, in the table's order, that a "
                  "frame of its stack belongs to, by file and function: 'parser' is "
                  "everything under the parser's calls, the pydantic objects it builds "
                  f"included{instruments}. Each cell: CPU us per streamed token (share of "
                  "the API server's CPU). The parse meter's row times `parse_delta` "
                  "directly; the chunks row says how many chunks and outputs (`parse_delta` "
                  "calls) the batch's tokens came in. The batches ran in this order: "
                  + ", ".join(p.get("order", list(res))) + ".", "",
                  "| category | " + " | ".join(res) + " |",
                  "|---|" + "---:|" * len(res)]
        for cat in [c for c, _ in CATEGORIES if c in seen] + ["other"]:
            lines.append(f"| {cat} | " + " | ".join(
                f"{r['shares'].get(cat, 0) * r['batch']['cpu_us_per_token']:.1f} "
                f"({r['shares'].get(cat, 0) * 100:.0f}%)" for r in res.values()) + " |")
        lines.append("| **all (from /proc)** | " + " | ".join(
            f"{r['batch']['cpu_us_per_token']:.1f}" for r in res.values()) + " |")
        lines.append("| parse meter: inside `parse_delta` | " + " | ".join(
            f"{r['batch']['parse_us_per_token']:.1f} ({r['batch']['parse_share_pct']:.0f}%)"
            for r in res.values()) + " |")
        lines.append(f"| chunks / outputs, for {next(iter(res.values()))['batch']['tokens']} "
                     "tokens | " + " | ".join(f"{r['batch']['chunks']} / "
                                              f"{r['batch'].get('parse_calls', '-')}"
                                              for r in res.values()) + " |")
        lines.append("| samples | " + " | ".join(str(r["samples"]) for r in res.values())
                     + " |")
        lines += ["", "Raw stacks (one line per distinct stack, root first, with its sample "
                  "count; written next to the report, ignored by git): " +
                  ", ".join(f"`{r['raw']}`" for r in res.values()) + ".", ""]
    lines += ["Raw results: " + f"`{path.with_suffix('.json').name}`; plot: "
              f"`{path.with_suffix('.png').name}`.", ""]
    path.write_text("\n".join(lines))


PLOTTED = (("cpu_us_per_token", "API-server CPU us/token"),
           ("parse_us_per_token", "parser CPU us/token (parse meter)"),
           ("itl_p99_ms", "ITL p99 ms"))


def write_plot(json_path: Path, more: tuple[Path, ...] = (), png: Path | None = None) -> bool:
    """The plot of ``json_path``'s results (and of ``more`` runs' cells, merged) in ``png``
    (default: next to the JSON)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed here: no plot (redraw with "
              f"`PYTHON_WITH_MATPLOTLIB scripts/bench_server.py --plot-only {json_path}`)",
              file=sys.stderr)
        return False
    data = json.loads(json_path.read_text())
    for extra in more:
        other = json.loads(extra.read_text())
        data["cells"] += other["cells"]
        data["shapes"] += [s for s in other["shapes"] if s not in data["shapes"]]
    colors = {"none": "#999999", "builtin": "#b2182b", "harmony-ext": "#2166ac"}
    concs = sorted({c["concurrency"] for c in data["cells"] if c["status"] == "ok"})
    styles = ["-", "--", ":", "-."]
    fig, axes = plt.subplots(len(PLOTTED), len(data["shapes"]),
                             figsize=(6 * len(data["shapes"]), 4 * len(PLOTTED)),
                             squeeze=False)
    for col, shape in enumerate(data["shapes"]):
        for row, (key, label) in enumerate(PLOTTED):
            ax = axes[row][col]
            for config in data["configs"]:
                for i, conc in enumerate(concs):
                    pts = [(c["tokens"], c["summary"][config][key])
                           for c in data["cells"] if c["status"] == "ok"
                           and c["shape"] == shape and c["concurrency"] == conc
                           and config in c["summary"] and key in c["summary"][config]]
                    if not pts:
                        continue
                    pts.sort()
                    xs = [p[0] for p in pts]
                    med = [p[1]["median"] for p in pts]
                    lo = [p[1]["median"] - p[1]["min"] for p in pts]
                    hi = [p[1]["max"] - p[1]["median"] for p in pts]
                    ax.errorbar(xs, med, yerr=[lo, hi], fmt=styles[i % 4], marker="o",
                                capsize=3, color=colors.get(config),
                                label=f"{config}, concurrency {conc}")
            ax.set_xscale("log")
            ax.set_title(f"{shape}: {label}", fontsize=9)
            ax.set_xlabel("output tokens per request")
            ax.set_ylabel(label + " (median, min-max)")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_ylim(bottom=0)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
    runs = f"{len(more) + 1} runs from " if more else ""
    fig.suptitle(f"vLLM API server under streaming load (tiny model, CPU), {runs}"
                 f"{data['date']}")
    fig.tight_layout(rect=(0, 0.08, 1, 0.96))
    fig.savefig(png or json_path.with_suffix(".png"), dpi=100)
    plt.close(fig)
    return True


def draw(json_path: Path) -> None:
    """The plot next to ``json_path``, drawn here or by a Python that has matplotlib: it is
    usually in .venv (the `bench` extra), not in the vLLM venv that runs the benchmark."""
    if importlib.util.find_spec("matplotlib") is not None:
        write_plot(json_path)
        return
    for py in (os.environ.get("PLOT_PYTHON"), str(ROOT / ".venv" / "bin" / "python")):
        if py and Path(py).exists():
            r = subprocess.run([py, __file__, "--plot-only", str(json_path)],
                               capture_output=True, check=False)
            if r.returncode == 0:
                return
    print("matplotlib is neither here nor in .venv or PLOT_PYTHON: no plot (draw it with "
          f"`PYTHON_WITH_MATPLOTLIB scripts/bench_server.py --plot-only {json_path}`)",
          file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget-minutes", type=float, default=110,
                   help="stop starting cells that would not finish in this time (default 110)")
    p.add_argument("--lengths", default="1k,8k,32k", help="output tokens per request")
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--shapes", default="reasoning,call")
    p.add_argument("--configs", default="none,builtin,harmony-ext")
    p.add_argument("--cells", default="",
                   help="only these cells, SHAPE:LENGTH:CONCURRENCY separated by commas "
                        "(e.g. call:8k:1); default: every shape x length x concurrency")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--min-tokens", type=int, default=4096,
                   help="output tokens per batch at least (waves of requests)")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "bench-server.md")
    p.add_argument("--venv-vllm", type=Path,
                   default=Path(os.environ.get("VENV_VLLM", ROOT / ".venv-vllm")))
    p.add_argument("--model-dir", type=Path, default=ROOT / ".cache" / "tiny-gpt-oss")
    p.add_argument("--one-at-a-time", action="store_true",
                   help="never run the servers at once (default: at once if memory allows)")
    p.add_argument("--profile-cells", default="call:32k:1,reasoning:1k:8,call:1k:32",
                   help="after the measured cells, one extra batch per configuration in each "
                        "of these cells (SHAPE:LENGTH:CONCURRENCY, commas) with the API "
                        "server's CPU-time sampler on; '' for none")
    p.add_argument("--meter-every", type=int, default=16,
                   help="the parse meter times one parse_delta call in N (default 16; 0: "
                        "no meter)")
    p.add_argument("--profile-min-tokens", type=int, default=32768,
                   help="output tokens per profiled batch at least (default 32768)")
    p.add_argument("--profile-minutes", type=float, default=10,
                   help="of the budget, kept for the profiled batches (default 10)")
    p.add_argument("--plot-only", type=Path, nargs="+",
                   help="redraw the plot from results .json files (several: cells merged)")
    p.add_argument("--plot-out", type=Path, help="with --plot-only: the .png to write")
    p.add_argument("--redraw", type=Path,
                   help="rewrite the report (--out) and its plot from a results .json")
    args = p.parse_args(argv)

    if args.plot_only:
        ok = write_plot(args.plot_only[0], tuple(args.plot_only[1:]), args.plot_out)
        return 0 if ok else 1
    if args.redraw:
        data = json.loads(args.redraw.read_text())
        for cell in data["cells"]:  # results written before the count was kept
            for stats in cell.get("summary", {}).values():
                for s in stats.values():
                    s.setdefault("n", data["repeats"])
        write_report(args.out, data)
        draw(args.redraw)
        return 0

    # The servers run in sessions of their own: on SIGTERM or SIGHUP unwind through the
    # `finally` that stops them, as Ctrl-C does, instead of leaving them running.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    t_start = time.monotonic()
    commit = load_bench_module().git_state()  # what runs: read at the start
    budget = args.budget_minutes * 60
    lengths = parse_lengths(args.lengths)
    concs = [int(c) for c in args.concurrency.split(",")]
    shapes = args.shapes.split(",")
    if args.cells:  # the shapes, lengths and concurrencies the cells name
        parts = [x.split(":") for x in args.cells.split(",")]
        shapes = list(dict.fromkeys(x[0] for x in parts))
        lengths = sorted({parse_lengths(x[1])[0] for x in parts})
        concs = sorted({int(x[2]) for x in parts})
    configs = args.configs.split(",")
    for s in shapes:
        if s not in SHAPES:
            p.error(f"unknown shape {s}; known: {', '.join(SHAPES)}")
    for c in configs:
        if c not in CONFIGS:
            p.error(f"unknown configuration {c}; known: {', '.join(CONFIGS)}")
    py = args.venv_vllm / "bin" / "python"
    if not py.exists():
        p.error(f"{py} is missing: run scripts/setup_vllm_env.sh (or pass --venv-vllm)")
    try:
        import openai  # noqa: F401
    except ImportError:
        p.error("the openai client is missing: run this with the vLLM venv's Python")

    profile_cells = [(x[0], parse_lengths(x[1])[0], int(x[2]))
                     for x in (c.split(":") for c in args.profile_cells.split(",") if c)]
    for shape, *_ in profile_cells:
        if shape not in SHAPES:
            p.error(f"unknown shape {shape} in --profile-cells; known: {', '.join(SHAPES)}")
    cells_budget = budget - (args.profile_minutes * 60 if profile_cells else 0)

    log("building the token streams")
    streams = build_streams(shapes, lengths)
    for shape, n, _ in profile_cells:
        if (shape, n) not in streams:
            streams[shape, n] = build_streams([shape], [n])[shape, n]
    warm = build_streams(shapes, [512])
    max_len = max(len(ids) for ids in streams.values()) + PROMPT_ROOM
    # KV cache: 2 layers x (K, V) x 2 heads x 32 x 4 bytes at most, per token.
    top_conc = max(concs + [c for *_, c in profile_cells])
    kv_gb = max(1, math.ceil(top_conc * max_len * 1024 * 1.5 / 2**30))
    subprocess.run([str(py), str(ROOT / "scripts" / "make_tiny_model.py"),
                    str(args.model_dir)], check=True)

    mem_gb = 0.0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable"):
            mem_gb = int(line.split()[1]) / 2**20
    together = not args.one_at_a_time and mem_gb > len(configs) * (4.5 + kv_gb) + 2
    log(f"MemAvailable {mem_gb:.1f} GiB, KV cache {kv_gb} GiB per server, max-model-len "
        f"{max_len}: servers {'at once' if together else 'one at a time'}")

    # Cells, cheapest first: the budget cuts the most expensive ones.
    if args.cells:
        wanted = [(s, parse_lengths(n)[0], int(c))
                  for s, n, c in (x.split(":") for x in args.cells.split(","))]
    else:
        wanted = [(s, n, c) for n in lengths for c in concs for s in shapes]
    cells = [{"shape": s, "tokens": n, "concurrency": c, "status": "pending", "runs": []}
             for s, n, c in wanted]
    for cell in cells:
        cell["ids"] = streams[cell["shape"], cell["tokens"]]
        cell["waves"] = max(1, math.ceil(args.min_tokens / (len(cell["ids"]) *
                                                            cell["concurrency"])))
    cells.sort(key=lambda c: (len(c["ids"]) * c["concurrency"] * c["waves"],
                              c["shape"]))

    logdir = Path(tempfile.mkdtemp(prefix="bench-server-"))
    log(f"server logs in {logdir}")
    servers: dict[str, Server] = {}
    idle: dict[str, float] = {}
    rate: dict[int, float] = {}  # concurrency -> measured tokens/s (slowest configuration)
    profiles: list[dict[str, Any]] = []

    def start(names: list[str]) -> None:
        for name in names:
            servers[name] = Server(name, args.venv_vllm, args.model_dir, max_len, kv_gb,
                                   logdir, args.meter_every)
        wait_ready([servers[n] for n in names], timeout=600)
        for name in names:  # warm-up: a short request of each shape
            for shape in shapes:
                asyncio.run(run_batch(servers[name], shape, warm[shape, 512], 2, 1))
            idle[name] = idle_cpu(servers[name])

    def stop(names: list[str]) -> None:
        for name in names:
            servers.pop(name).stop()

    startup_s = 0.0
    try:
        if together:
            t = time.monotonic()
            start(configs)
            startup_s = time.monotonic() - t
        for cell in cells:
            ids, conc, waves = cell["ids"], cell["concurrency"], cell["waves"]
            n_tokens = len(ids) * conc * waves
            # Unmeasured concurrency: the rate of the nearest lower one measured (higher
            # concurrency batches more requests per engine step, so this overestimates).
            lower = [c for c in rate if c <= conc]
            est_rate = rate.get(conc) or (rate[max(lower)] if lower else
                                          (min(rate.values()) if rate else None))
            left = cells_budget - (time.monotonic() - t_start)
            if est_rate:
                # Longer outputs slow the engine (attention over the context): margin 1.25x.
                est = n_tokens / est_rate * len(configs) * args.repeats * 1.25
                if not together:
                    est += startup_s * args.repeats
                if est > left:
                    cell["status"] = (f"not run: estimated {est / 60:.1f} min from the "
                                      f"throughput measured so far, {left / 60:.1f} min left "
                                      "in the budget")
                    log(f"skip {cell['shape']} {cell['tokens']} x{conc}: {cell['status']}")
                    continue
            log(f"cell {cell['shape']}, {len(ids)} tokens, concurrency {conc}, {waves} "
                f"wave(s)")
            for rep in range(args.repeats):
                order = configs[rep % len(configs):] + configs[:rep % len(configs)]
                for name in order:
                    if not together:
                        t = time.monotonic()
                        start([name])
                        startup_s = time.monotonic() - t
                    r = asyncio.run(run_batch(servers[name], cell["shape"], ids, conc, waves))
                    if not together:
                        stop([name])
                    r.update(config=name, repeat=rep)
                    cell["runs"].append(r)
                    log(f"  {name:12} rep {rep}: {r['cpu_us_per_token']:6.0f} us/token, "
                        f"TTFT {r['ttft_ms']:6.0f} ms, ITL p50 {r['itl_p50_ms']:5.1f} "
                        f"p99 {r['itl_p99_ms']:6.1f} ms, {r['tokens_per_s']:5.0f} tok/s, "
                        f"{r['tokens']}/{r['expected_tokens']} tokens, got {r['got']}")
                    rate[conc] = min(rate.get(conc, math.inf), r["tokens_per_s"])
            cell["status"] = "ok"
            cell["summary"] = {
                c: {key: summarise([r[key] for r in cell["runs"] if r["config"] == c])
                    for key, *_ in METRICS}
                for c in configs}
        for turn, (pshape, n_tok, pconc) in enumerate(profile_cells):
            ids = streams[pshape, n_tok]
            waves = max(1, math.ceil(args.profile_min_tokens / (len(ids) * pconc)))
            n_tokens = len(ids) * pconc * waves
            est_rate = rate.get(pconc) or (min(rate.values()) if rate else None)
            left = budget - (time.monotonic() - t_start)
            entry: dict[str, Any] = {"shape": pshape, "tokens": len(ids), "concurrency": pconc}
            if est_rate and n_tokens / est_rate * len(configs) * 1.25 > left:
                entry["status"] = (f"not run: estimated "
                                   f"{n_tokens / est_rate * len(configs) * 1.25 / 60:.1f} min, "
                                   f"{left / 60:.1f} min left in the budget")
                log(f"skip profile {pshape} {n_tok} x{pconc}: {entry['status']}")
                profiles.append(entry)
                continue
            log(f"profile {pshape}, {len(ids)} tokens, concurrency {pconc}")
            results = {}
            # The order rotates from one profiled cell to the next, as the repeats' does.
            for name in configs[turn % len(configs):] + configs[:turn % len(configs)]:
                if not together:
                    start([name])
                results[name] = profile_batch(servers[name], pshape, ids, pconc, waves,
                                              args.out.parent)
                if not together:
                    stop([name])
                shares = ", ".join(f"{k} {v * 100:.0f}%"
                                   for k, v in results[name]["shares"].items())
                log(f"  {name:12} {results[name]['samples']} samples: {shares}")
            entry.update(status="ok", order=list(results),
                         results={name: results[name] for name in configs})
            profiles.append(entry)
    finally:
        stop(list(servers))

    for cell in cells:
        cell["tokens"] = len(cell.pop("ids"))
    from importlib.metadata import version

    data = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
        "vllm": vllm_version(py),
        "openai": version("openai"),
        "machine": machine(), "command": " ".join(["scripts/bench_server.py", *sys.argv[1:]]),
        "wall_s": time.monotonic() - t_start, "budget_minutes": args.budget_minutes,
        "configs": configs, "shapes": shapes, "lengths": lengths, "concurrency": concs,
        "repeats": args.repeats, "min_tokens": args.min_tokens, "max_model_len": max_len,
        "together": together, "idle_cpu_ms_per_s": idle, "cells": cells, "profiles": profiles,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    json_path = args.out.with_suffix(".json")
    json_path.write_text(json.dumps(data, indent=1))
    write_report(args.out, data)
    draw(json_path)
    log(f"wrote {args.out}, {json_path} (wall {data['wall_s'] / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
