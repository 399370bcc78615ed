"""Performance benchmark: harmony-ext against the Harmony parsers it replaces, in ONE run.

    .venv/bin/python scripts/bench.py            # full run: docs/bench.md + docs/bench.png
    .venv/bin/python scripts/bench.py --quick    # a few minutes: docs/bench-quick.{md,png}

(``scripts/bench.sh`` installs the ``bench`` extra, matplotlib, and runs this.)

What runs, on the same o200k_harmony token streams for everyone (built here, once, and handed
to every worker as a file): four realistic output shapes (long reasoning then a short answer;
a long final answer; reasoning then a tool call with large arguments; several calls) at
1k-128k tokens, fed 1 and 8 tokens per delta, through seven implementations and one floor:

- core-ids: ``harmony_plugins.StreamParser.feed_ids`` (.venv);
- core-text: ``StreamParser.feed_text`` on the same output decoded as SGLang hands it over;
- openai_harmony: ``StreamableParser`` per token, reading delta, channel and recipient;
- vllm-builtin / vllm-ext: vLLM's ``HarmonyParser.parse_delta`` / ours (.venv-vllm);
- sglang-builtin / sglang-ext: SGLang's ``gpt-oss`` / ``harmony-ext`` reasoning and tool
  parsers (.venv-sglang);
- sglang-floor: the same SGLang chain with detectors that return a prebuilt result: what
  SGLang itself costs per step, the least any parser can cost there.

Each implementation runs in a subprocess of the venv that has its engine
(``scripts/bench_workers.py``, which prints JSON); this script merges the results into one
table with the pairwise ratios (ours/theirs: core-ids vs openai_harmony, vllm-ext vs
vllm-builtin, sglang-ext vs sglang-builtin), the memory one request holds after 64k tokens, a
256-stream interleaved run (CPU seconds per million tokens), a correctness cross-check (both
sides of a pair parse each stream to the same message) and the claims we make, each marked as
holding or not. Missing engines are reported as skipped, never left out; a quadratic parser
is measured up to the per-cell budget and its larger cells are reported with an estimate.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
WORKERS = ROOT / "scripts" / "bench_workers.py"

K = 1024
SHAPES = {
    "reasoning": "long reasoning, then a short final answer (160 tokens)",
    "final": "short reasoning (96 tokens), then a long final answer",
    "call": "reasoning (1/4), then one write_file call whose arguments are the rest",
    "calls": "reasoning (1/4), then 8 calls in a row (search_docs / write_file), "
             "arguments the rest",
}
IMPLS = {  # name -> (venv, ours, label)
    "core-ids": (".venv", True, "harmony-ext core, feed_ids"),
    "core-text": (".venv", True, "harmony-ext core, feed_text"),
    "openai_harmony": (".venv", False, "openai_harmony StreamableParser"),
    "vllm-ext": (".venv-vllm", True, "vLLM + vllm_ext (harmony-ext)"),
    "vllm-builtin": (".venv-vllm", False, "vLLM built-in HarmonyParser"),
    "sglang-ext": (".venv-sglang", True, "SGLang + sglang_ext (harmony-ext)"),
    "sglang-builtin": (".venv-sglang", False, "SGLang built-in gpt-oss parsers"),
    "sglang-floor": (".venv-sglang", False,
                     "SGLang's parser chain alone (detectors that parse nothing): the least "
                     "any parser can cost there"),
}
FLOORS = {"sglang-builtin": "sglang-floor"}  # built-in -> its engine's cost with no parsing
PAIRS = [("core-ids", "openai_harmony"), ("vllm-ext", "vllm-builtin"),
         ("sglang-ext", "sglang-builtin")]
CHECK_PAIRS = PAIRS + [("core-text", "core-ids")]

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search_docs", "description": "Search the documentation.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "write_file", "description": "Write a file in the workspace.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"]}}},
]


def config(quick: bool) -> dict[str, Any]:
    if quick:
        return {
            "lengths": [1 * K, 4 * K, 16 * K], "ours_extra": [128 * K],
            "repeats": {1 * K: 7, 4 * K: 5, 16 * K: 3, 64 * K: 3, 128 * K: 5},
            "budget_s": 8.0,
            "concurrent": {"streams": 256, "length": 1 * K, "size": 1, "budget_s": 45.0},
            "memory": {"length": 64 * K, "size": 8, "budget_s": 20.0, "probe": [1 * K, 4 * K]},
            "worker_timeout_s": 600,
        }
    return {
        "lengths": [1 * K, 4 * K, 16 * K, 64 * K, 128 * K], "ours_extra": [],
        "repeats": {1 * K: 21, 4 * K: 11, 16 * K: 7, 64 * K: 5, 128 * K: 5},
        "budget_s": 25.0,
        "concurrent": {"streams": 256, "length": 4 * K, "size": 1, "budget_s": 150.0},
        "memory": {"length": 64 * K, "size": 8, "budget_s": 60.0, "probe": [1 * K, 4 * K]},
        "worker_timeout_s": 1800,
    }


# -- the token streams -------------------------------------------------------------------------

WORDS = (  # noqa: SIM905 - a word list is easier to read as one string
    "the of and to in is that for it as with on this be are by from at or an we not which "
    "value values function request response parser token tokens stream model output user "
    "should would could must check compute return result results error errors case cases "
    "first then next because however therefore maybe likely simple complex fast slow large "
    "small list dict string number integer field fields index cache buffer state machine "
    "header body message channel weather Paris Berlin Tokyo temperature forecast rain wind "
    "file path write read update delete query search limit page docs section example "
    "données naïve café Ελληνικά 数据 分析 結果 日本語 😀 🚀 ✅ → ≤ ≥ ∑ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🦩 "
).split()
PUNCT = [",", ",", ".", ";", ":", " -", "?", "!"]
CODE = [
    "def {n}(x, y=None):", "    if x is None:", "        return []",
    "    total = sum(v * 2 for v in x)  # {w}", "    result[\"{w}\"] = total / len(x)",
    "class {N}:", "    __slots__ = (\"a\", \"b\")", "    def __init__(self, a, b):",
    "        self.a, self.b = a, b", "for i in range({d}):",
    "    print(f\"{{i}}: {w} {{x!r}}\")", "return {{\"ok\": True, \"value\": {d}}}",
    "import json, os, re", "# {w} {w} {w}", "    raise ValueError('bad {w}')",
    "    path = os.path.join(root, '{w}.txt')  # 数据", "",
]


def _prose_line(rng: random.Random) -> str:
    words = []
    for _ in range(rng.randint(8, 24)):
        word = rng.choice(WORDS)
        if rng.random() < 0.08:
            word = str(rng.randint(0, 10**rng.randint(1, 6)))
        words.append(word)
        if rng.random() < 0.12:
            words[-1] += rng.choice(PUNCT)
    line = " ".join(words)
    return line[0].upper() + line[1:] + "." + ("\n\n" if rng.random() < 0.2 else " ")


def _code_line(rng: random.Random) -> str:
    w = rng.choice(WORDS[:80])
    return rng.choice(CODE).format(n=w + "_fn", N=w.title() + "Box", w=w,
                                   d=rng.randint(0, 9999)) + "\n"


class Corpus:
    """Endless ordinary-token text, line by line, deterministic (seeded)."""

    def __init__(self, enc: Any, kind: str, seed: int) -> None:
        self.enc, self.kind, self.rng = enc, kind, random.Random(seed)

    def line_ids(self) -> list[int]:
        rng = self.rng
        if self.kind == "prose":
            text = _prose_line(rng) if rng.random() < 0.85 else _code_line(rng)
        elif self.kind == "markdown":
            r = rng.random()
            text = ("## " + _prose_line(rng).strip() + "\n") if r < 0.05 else (
                "- " + _prose_line(rng) if r < 0.25 else (
                    "```python\n" + "".join(_code_line(rng) for _ in range(6)) + "```\n"
                    if r < 0.35 else _prose_line(rng)))
        else:  # "json": the inside of a JSON string, as the model writes it (escaped)
            raw = "".join(_code_line(rng) for _ in range(3)) if rng.random() < 0.7 else \
                _prose_line(rng)
            text = json.dumps(raw, ensure_ascii=False)[1:-1]
        return self.enc.encode_ordinary(text)

    def take(self, k: int, pieces: list[bytes]) -> list[int]:
        """About ``k`` tokens of whole lines, the last one cut where the text is complete
        (valid UTF-8; inside a JSON string not after a lone backslash)."""
        out: list[int] = []
        while len(out) < k:
            line = self.line_ids()
            room = k - len(out)
            if len(line) <= room:
                out += line
                continue
            for cut in range(room, -1, -1):
                head = b"".join(pieces[t] for t in line[:cut])
                try:
                    text = head.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                if self.kind == "json" and (len(text) - len(text.rstrip("\\"))) % 2:
                    continue
                out += line[:cut]
                break
            break
        return out


def build_stream(enc: Any, pieces: list[bytes], shape: str, n: int, seed: int) -> list[int]:
    """About ``n`` token ids of one assistant output of the given shape (after the prompt's
    ``<|start|>assistant``), ending with the stop token the engine stops on. ``pieces``:
    the bytes of each ordinary token."""

    def sp(text: str) -> list[int]:
        return enc.encode(text, allowed_special="all")

    prose = Corpus(enc, "prose", seed)
    markdown = Corpus(enc, "markdown", seed + 1)
    args = Corpus(enc, "json", seed + 2)
    analysis = sp("<|channel|>analysis<|message|>")
    restart = sp("<|end|><|start|>assistant")
    final = sp("<|channel|>final<|message|>")

    def call_head(name: str) -> list[int]:
        return sp(f"<|start|>assistant<|channel|>commentary to=functions.{name} "
                  "<|constrain|>json<|message|>")

    if shape == "reasoning":
        fixed = analysis + restart + final + sp("<|return|>")
        answer = 160
        return (analysis + prose.take(n - len(fixed) - answer, pieces) + restart + final
                + markdown.take(answer, pieces) + sp("<|return|>"))
    if shape == "final":
        fixed = analysis + restart + final + sp("<|return|>")
        return (analysis + prose.take(96, pieces) + restart + final
                + markdown.take(n - len(fixed) - 96, pieces) + sp("<|return|>"))
    if shape == "call":
        head = call_head("write_file") + sp('{"path": "src/app/module.py", "content": "')
        tail = sp('"}<|call|>')
        fixed = analysis + sp("<|end|>") + head + tail
        rest = n - len(fixed)
        return (analysis + prose.take(rest // 4, pieces) + sp("<|end|>") + head
                + args.take(rest - rest // 4, pieces) + tail)
    if shape == "calls":
        heads, tails = [], []
        for i in range(8):
            if i % 2 == 0:
                heads.append(call_head("search_docs") + sp('{"query": "'))
                tails.append(sp('", "limit": 5}<|call|>'))
            else:
                heads.append(call_head("write_file")
                             + sp(f'{{"path": "notes/part_{i}.md", "content": "'))
                tails.append(sp('"}<|call|>'))
        fixed = analysis + sp("<|end|>") + [t for h in heads for t in h] + \
            [t for tail in tails for t in tail]
        rest = n - len(fixed)
        out = analysis + prose.take(rest // 4, pieces) + sp("<|end|>")
        each = (rest - rest // 4) // 8
        for i in range(8):
            out += heads[i] + args.take(each, pieces) + tails[i]
        return out
    raise ValueError(shape)


def token_pieces(enc: Any, ids: list[int]) -> list[str]:
    """The text each token completes, as an incremental detokenizer hands it over: special
    tokens spelled literally, a character cut between tokens held until its last byte."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    specials = {enc.encode_single_token(s): s for s in enc.special_tokens_set}
    out = []
    for t in ids:
        if t in specials:
            out.append(decoder.decode(b"", final=True) + specials[t])
        else:
            out.append(decoder.decode(enc.decode_single_token_bytes(t)))
    return out


def write_streams(path: Path, lengths: list[int]) -> dict[str, dict[int, int]]:
    from harmony_plugins.o200k import o200k_base_pieces, tiktoken_encoding

    enc = tiktoken_encoding()
    pieces = o200k_base_pieces()
    streams: dict[str, dict[str, Any]] = {}
    counts: dict[str, dict[int, int]] = {}
    for s_index, shape in enumerate(SHAPES):
        streams[shape] = {}
        counts[shape] = {}
        for n in lengths:
            ids = build_stream(enc, pieces, shape, n, seed=1000 * s_index + n)
            text = token_pieces(enc, ids)
            assert "".join(text) == enc.decode(ids), (shape, n)
            streams[shape][str(n)] = {"ids": ids, "pieces": text}
            counts[shape][n] = len(ids)
    path.write_text(json.dumps({"streams": streams, "tools": TOOLS}, ensure_ascii=False))
    return counts


# -- running the workers ---------------------------------------------------------------------


def venv_python(venv: str) -> Path | None:
    if venv == ".venv":
        return Path(sys.executable)
    py = ROOT / venv / "bin" / "python"
    return py if py.exists() else None


def snapshot(tmp: Path) -> tuple[Path, str]:
    """The code to measure: harmony_plugins, vllm_ext and sglang_ext as committed at HEAD,
    extracted to ``tmp`` (others may be editing the checkout while the benchmark runs), with
    this checkout's worker script. Returns the worker's path and a label for the report."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                            capture_output=True, check=True).stdout.strip()
    packages = [p for p in ("harmony_plugins", "harmony_adapters", "vllm_ext", "sglang_ext")
                if (ROOT / p).is_dir()]
    archive = subprocess.run(["git", "archive", "HEAD", *packages], cwd=ROOT,
                             capture_output=True, check=True).stdout
    dest = tmp / "src"
    dest.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    (dest / "scripts").mkdir()
    shutil.copy2(WORKERS, dest / "scripts" / WORKERS.name)
    return dest / "scripts" / WORKERS.name, f"commit {commit}"


def run_worker(impl: str, streams: Path, plan: dict[str, Any], tmp: Path,
               timeout: float, worker: Path = WORKERS, source: str = "") -> dict[str, Any]:
    venv = IMPLS[impl][0]
    python = venv_python(venv)
    if python is None:
        return {"impl": impl, "status": "skipped", "reason": f"not installed (no {venv})"}
    plan_file = tmp / f"plan-{impl}.json"
    plan_file.write_text(json.dumps(plan))
    out_file = tmp / f"out-{impl}.json"
    cmd = [str(python), str(worker), impl, "--streams", str(streams), "--plan",
           str(plan_file)]
    env = dict(os.environ, PYTHONHASHSEED="0", TOKENIZERS_PARALLELISM="false",
               OMP_NUM_THREADS="1", VLLM_LOGGING_LEVEL="WARNING")
    if source:
        env["BENCH_SOURCE"] = source
    tail: list[str] = []
    with open(out_file, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT, env=env)

        def echo() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                tail.append(line)
                del tail[:-40]
                if line.startswith(impl) or "Error" in line or "Traceback" in line:
                    print("   ", line.rstrip(), flush=True)

        reader = threading.Thread(target=echo, daemon=True)
        reader.start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = "timeout"
        reader.join(5)
    text = out_file.read_text().strip().splitlines()
    if rc == 0 and text:
        try:
            return json.loads(text[-1])
        except json.JSONDecodeError:
            pass
    return {"impl": impl, "status": "failed",
            "reason": f"worker exit {rc}; last stderr: {''.join(tail[-8:]).strip()[-600:]}"}


def worker_plan(impl: str, conf: dict[str, Any], memory: bool) -> dict[str, Any]:
    ours = IMPLS[impl][1]
    lengths = conf["lengths"] + (conf["ours_extra"] if ours else [])
    return {
        "shapes": list(SHAPES), "sizes": [1, 8], "lengths": lengths,
        "repeats": {str(k): v for k, v in conf["repeats"].items()},
        "budget_s": conf["budget_s"], "concurrent": conf["concurrent"],
        "memory": conf["memory"] if memory else None,
        "check": [{"shape": s, "n": min(conf["lengths"]), "size": z}
                  for s in SHAPES for z in (1, 8)],
    }


# -- the report --------------------------------------------------------------------------------


def fmt_us(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.3g}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:,.0f}"


def kib(n: int) -> str:
    return f"{n / K:,.0f} KiB" if abs(n) < 10 * K * K else f"{n / K / K:,.1f} MiB"


def cell_of(results: dict[str, Any], impl: str, shape: str, n: int, size: int) -> dict | None:
    for c in results.get(impl, {}).get("cells", []) or []:
        if c["shape"] == shape and c["n"] == n and c["size"] == size:
            return c
    return None


def median_of(results: dict[str, Any], impl: str, shape: str, n: int, size: int) -> float | None:
    c = cell_of(results, impl, shape, n, size)
    return c["median_us"] if c and c.get("status") == "ok" else None


def cell_text(results: dict[str, Any], impl: str, shape: str, n: int, size: int) -> str:
    r = results.get(impl, {})
    if r.get("status") != "ok":
        return "skipped" if r.get("status") == "skipped" else "failed"
    c = cell_of(results, impl, shape, n, size)
    if c is None:
        return "not run"
    if c.get("status") != "ok":
        reason = c.get("reason", "skipped")
        return "skipped (" + reason.replace("would take ", "") + ")" \
            if reason.startswith("would take") else reason
    mark = " *" if c.get("contended") else ""
    return f"{fmt_us(c['median_us'])} ({fmt_us(c['p95_us'])}){mark}"


def slowed_note(results: dict[str, Any]) -> str:
    cells = [c for r in results.values() for c in r.get("cells", []) or []
             if c.get("status") == "ok"]
    aside = sum(c.get("set_aside", 0) for c in cells)
    marked = sum(1 for c in cells if c.get("contended"))
    return f"this run: {aside} runs set aside, {marked} of {len(cells)} cells marked"


def status_line(r: dict[str, Any]) -> str:
    if not r:
        return "not run"
    if r.get("status") == "ok":
        return "ran"
    return f"{r.get('status')} ({r.get('reason', '')})"


def machine() -> dict[str, str]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    load = "?"
    with contextlib.suppress(OSError):
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return {"cpu": cpu, "cores": str(os.cpu_count()), "memory": mem, "load": load,
            "os": platform.platform()}


def git_state() -> str:
    """HEAD, and whether the checkout's packages differ from it."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                                capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "harmony_plugins",
                                "harmony_adapters", "vllm_ext", "sglang_ext"], cwd=ROOT,
                               text=True, capture_output=True, check=True).stdout.strip()
        return commit + (" (the checkout has uncommitted changes in harmony_plugins, "
                         "harmony_adapters, vllm_ext or sglang_ext)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def claims(results: dict[str, Any], lengths: list[int]) -> list[tuple[str, str, str]]:
    """(claim, measured, verdict) for each target we want to claim."""
    out = []
    lo, hi = 1 * K, 128 * K
    ratios, missing = [], set()
    for impl in ("core-ids", "core-text", "vllm-ext", "sglang-ext"):
        for shape in SHAPES:
            for size in (1, 8):
                a, b = median_of(results, impl, shape, lo, size), \
                    median_of(results, impl, shape, hi, size)
                if a is None or b is None:
                    missing.add(impl)
                else:
                    ratios.append((b / a, f"{impl} {shape} {size}/delta"))
    if ratios:
        bad = sorted((r for r in ratios if r[0] > 1.3), reverse=True)
        measured = f"128k/1k: worst {max(ratios)[0]:.2f} ({max(ratios)[1]}); " + (
            f"over 1.3 in {len(bad)} of {len(ratios)} cells: "
            + ", ".join(f"{where} {r:.2f}" for r, where in bad) if bad
            else f"all {len(ratios)} cells within 1.3")
    else:
        bad, measured = [], "not measured"
    if missing:
        measured += f"; not measured for {', '.join(sorted(missing))}"
    out.append(("ours flat from 1k to 128k (128k within 1.3x of 1k, every shape and delta "
                "size)", measured, _holds(ratios and not bad, sorted(missing), bool(ratios))))
    for ours, theirs, label in (("vllm-ext", "vllm-builtin", "vLLM adapter"),
                                ("sglang-ext", "sglang-builtin", "SGLang adapter")):
        pairs, gaps = [], []
        for shape in SHAPES:
            for size in (1, 8):
                a, b = median_of(results, ours, shape, 16 * K, size), \
                    median_of(results, theirs, shape, 16 * K, size)
                if a is None or b is None:
                    gaps.append(f"{shape} {size}/delta")
                else:
                    pairs.append((b / a, f"{shape} {size}/delta"))
        if pairs:
            below = sorted(p for p in pairs if p[0] < 10)
            measured = (f"{theirs}/{ours} at 16k: " + ", ".join(
                f"{where} {r:.1f}x" for r, where in sorted(pairs, key=lambda p: p[1]))
                + (f"; under 10x in {len(below)} of {len(pairs)} cells" if below else ""))
        else:
            below, measured = [], "not measured"
        if gaps:
            measured += f"; not measured: {', '.join(gaps)} (see the tables)"
        floor = FLOORS.get(theirs)
        if below and floor:
            bounds = []
            for _, where in below:
                shape, size = where.split()[0], int(where.split()[1].split("/")[0])
                f = median_of(results, floor, shape, 16 * K, size)
                c = median_of(results, "core-text", shape, 16 * K, size)
                b = median_of(results, theirs, shape, 16 * K, size)
                if f and c and b:
                    bounds.append(f"{where} {b / (f + c):.1f}x")
            if bounds:
                measured += (f"; the most any adapter on our core could reach there, "
                             f"{theirs} / ({floor} + core-text): " + ", ".join(bounds))
        out.append((f"{label} >= 10x cheaper than the built-in at 16k tokens", measured,
                    _holds(pairs and not below, gaps, bool(pairs))))
    worst_us, worst_where, beaten, over, rows = 0.0, "", [], [], 0
    for shape in SHAPES:
        for size in (1, 8):
            for n in lengths:
                a = median_of(results, "core-ids", shape, n, size)
                b = median_of(results, "openai_harmony", shape, n, size)
                if a is None:
                    continue
                rows += 1
                where = f"{shape} {n // K}k {size}/delta"
                if a > worst_us:
                    worst_us, worst_where = a, where
                if a >= 1:
                    over.append(where)
                if b is not None and a >= b:
                    beaten.append(where)
    if rows:
        measured = (f"max {worst_us:.2f} us/token ({worst_where}); at or over 1 us in "
                    f"{len(over)} of {rows} cells" + (f" ({', '.join(over)})" if over else "")
                    + f"; not below openai_harmony in {len(beaten)} cell(s)"
                    + (f" ({', '.join(beaten)})" if beaten else ""))
    else:
        measured = "not measured"
    out.append(("core on ids < 1 us/token and below openai_harmony's (every cell)", measured,
                _holds(rows and not over and not beaten, [], bool(rows))))
    return out


def _holds(ok: Any, missing: list[str], measured: bool) -> str:
    if not measured:
        return "not measured"
    if ok:
        return "holds" + (" (where measured)" if missing else "")
    return "does NOT hold"


def messages_agree(results: dict[str, Any],
                   pairs: list[tuple[str, str]] = CHECK_PAIRS) -> list[tuple[str, str, str]]:
    """(pair, stream, verdict) for each stream both sides of a pair parsed."""
    rows = []
    for ours, theirs in pairs:
        a = {(m["shape"], m["size"]): m["message"] for m in results.get(ours, {}).get(
            "messages", []) or []}
        b = {(m["shape"], m["size"]): m["message"] for m in results.get(theirs, {}).get(
            "messages", []) or []}
        if not a or not b:
            rows.append((f"{ours} / {theirs}", "–", "not compared (one side did not run)"))
            continue
        for key in sorted(a):
            same = a[key] == b.get(key)
            diff = "" if same else describe_diff(a[key], b.get(key))
            rows.append((f"{ours} / {theirs}", f"{key[0]}, {key[1]}/delta",
                         "same message" if same else f"DIFFERENT: {diff}"))
    return rows


def describe_diff(a: dict[str, Any], b: dict[str, Any] | None) -> str:
    if b is None:
        return "missing"
    if "error" in a or "error" in b:
        return a.get("error") or b.get("error") or "error"
    parts = []
    for key in ("reasoning", "content"):
        if a.get(key) != b.get(key):
            x, y = a.get(key) or "", b.get(key) or ""
            i = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q),
                     min(len(x), len(y)))
            parts.append(f"{key} {len(x)} vs {len(y)} chars, first difference at {i}: "
                         f"{x[i:i + 30]!r} vs {y[i:i + 30]!r}")
    if a.get("calls") != b.get("calls"):
        parts.append(f"calls {[c[0] for c in a.get('calls', [])]} vs "
                     f"{[c[0] for c in b.get('calls', [])]}"
                     + (" (same names, arguments differ)"
                        if [c[0] for c in a.get("calls", [])] ==
                        [c[0] for c in b.get("calls", [])] else ""))
    return "; ".join(parts)


def write_report(path: Path, results: dict[str, Any], conf: dict[str, Any], quick: bool,
                 counts: dict[str, dict[int, int]], elapsed: float, plot: str | None,
                 source: str = "working tree") -> None:
    lengths = sorted(set(conf["lengths"] + conf["ours_extra"]))
    m = machine()
    lines = [
        "# harmony-ext performance benchmark" + (" (quick run)" if quick else ""),
        "",
        f"Generated by `.venv/bin/python scripts/bench.py{' --quick' if quick else ''}` "
        "(`scripts/bench.sh`); do not edit by hand.",
        "",
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}; whole run "
        f"{elapsed / 60:.1f} min",
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['memory']} RAM, {m['os']}; load "
        f"average at the end {m['load']} (shared machine: figures are CPU time of the "
        "parsing thread, which other processes do not inflate much, but caches are shared)",
        f"- measured: harmony-ext {source}; checkout at {git_state()}",
    ]
    versions: dict[str, str] = {}
    for r in results.values():
        for k, v in (r.get("versions") or {}).items():
            if k not in ("parser", "parsers", "harmony-ext"):
                versions[k] = v
        if r.get("python"):
            versions["python"] = r["python"]
    lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    lines += ["", "| implementation | what | status | setup s | run s |", "|---|---|---|---:|---:|"]
    for impl, (_, _, label) in IMPLS.items():
        r = results.get(impl, {})
        lines.append(f"| {impl} | {label} | {status_line(r)} | {r.get('setup_s', '–')} | "
                     f"{r.get('wall_s', '–')} |")

    lines += ["", "## Claims", "", "| claim | measured | verdict |", "|---|---|---|"]
    for claim, measured, verdict in claims(results, lengths):
        lines.append(f"| {claim} | {measured} | **{verdict}** |")

    lines += ["", "## Per-token cost", "",
              "Microseconds of CPU per generated token for one whole request (parser built, "
              "every delta fed, end of stream), median over repeats (p95 in brackets; with few "
              "repeats p95 is the slowest run). Columns are output lengths in tokens "
              "(1k = 1024). `skipped: ~N s` = what the cell would take, extrapolated from the "
              "smaller lengths, over the per-cell budget of "
              f"{conf['budget_s']:.0f} s. The machine is shared: a run during which a "
              "half-millisecond probe ran over 1.4x slower than its best is set aside and "
              "replaced (up to twice the repeats); `*` marks a cell where every run was slowed "
              f"({slowed_note(results)}).", ""]
    for shape, desc in SHAPES.items():
        lines += [f"### {shape}: {desc}", "",
                  "| implementation | per delta | " + " | ".join(
                      f"{n // K}k" for n in lengths) + " |",
                  "|---|---:|" + "---:|" * len(lengths)]
        for size in (1, 8):
            for impl in IMPLS:
                lines.append(f"| {impl} | {size} | " + " | ".join(
                    cell_text(results, impl, shape, n, size) for n in lengths) + " |")
        lines.append("")

    lines += ["## Ratios, ours / theirs (same run, same streams)", "",
              "Below 1 means ours is cheaper; 0.05 = 20x cheaper.", "",
              "| pair | shape | per delta | " + " | ".join(f"{n // K}k" for n in lengths)
              + " |", "|---|---|---:|" + "---:|" * len(lengths)]
    for ours, theirs in PAIRS:
        for shape in SHAPES:
            for size in (1, 8):
                row = []
                for n in lengths:
                    a, b = median_of(results, ours, shape, n, size), \
                        median_of(results, theirs, shape, n, size)
                    row.append(f"{a / b:.3f}" if a is not None and b is not None else "–")
                lines.append(f"| {ours} / {theirs} | {shape} | {size} | " + " | ".join(row)
                             + " |")
    lines.append("")

    mem = conf["memory"]
    lines += ["## Memory held per request", "",
              f"After {mem['length'] // K}k tokens: every delta but the last fed "
              f"({mem['size']} tokens per delta, each a fresh object as in a server), the "
              "request still open; first thing in the worker process after two small sizing "
              "runs. `Python` = allocations still alive (tracemalloc); `malloc` = growth of the "
              "C allocator's bytes in use (glibc mallinfo2), which also sees native memory "
              "such as openai_harmony's Rust heap (invisible to tracemalloc) and Python objects "
              "over 512 bytes, but not small Python objects.", "",
              "| implementation | " + " | ".join(f"{s}: Python / malloc" for s in SHAPES)
              + " |",
              "|---|" + "---:|" * len(SHAPES)]
    for impl in IMPLS:
        r = results.get(impl, {})
        if r.get("status") != "ok" or not r.get("memory"):
            why = status_line(r) if r.get("status") != "ok" else "not run"
            lines.append(f"| {impl} | " + " | ".join([why] * len(SHAPES)) + " |")
            continue
        row = []
        for item in r.get("memory", []):
            if item.get("status") == "ok":
                native = item.get("malloc_bytes")
                row.append(f"{kib(item['traced_bytes'])} / "
                           + (kib(native) if native is not None else "–"))
            else:
                row.append(item.get("reason", "skipped"))
        lines.append(f"| {impl} | " + " | ".join(row) + " |")
    lines.append("")

    c = conf["concurrent"]
    lines += ["## 256 concurrent streams", "",
              f"{c['streams']} requests alive at once, each {c['length'] // K}k tokens, shapes "
              f"in turn, {c['size']} token per delta; each engine step delivers one delta to "
              "every live stream, round-robin. Total CPU of all parser calls (parsers built "
              "included) per million generated tokens; `*`: the machine was slowed down "
              "around the run (one run each, not repeated).", "",
              "| implementation | CPU s per 1M tokens | tokens | CPU s | vs its pair |",
              "|---|---:|---:|---:|---:|"]
    per_m = {}
    for impl in IMPLS:
        r = results.get(impl, {})
        cc = r.get("concurrent") or {}
        if cc.get("status") == "ok":
            per_m[impl] = cc["cpu_s_per_1m"]
    for impl in IMPLS:
        r = results.get(impl, {})
        cc = r.get("concurrent") or {}
        pair = next((p for p in PAIRS if impl in p), None)
        ratio = "–"
        if pair and pair[0] in per_m and pair[1] in per_m:
            ratio = f"ours/theirs {per_m[pair[0]] / per_m[pair[1]]:.3f}"
        if cc.get("status") == "ok":
            mark = " *" if cc.get("contended") else ""
            lines.append(f"| {impl} | {cc['cpu_s_per_1m']:.2f}{mark} | {cc['tokens']:,} | "
                         f"{cc['cpu_s']:.2f} | {ratio} |")
        else:
            why = cc.get("reason") if cc else status_line(r)
            lines.append(f"| {impl} | skipped ({why}) | – | – | – |")
    lines.append("")

    lines += ["## Correctness cross-check", "",
              f"Each pair parses the same {min(conf['lengths']):,}-token stream of every shape "
              "to a message "
              "(reasoning, content, calls with arguments compared as JSON values), streamed "
              "as in the timed runs. Not timed.", "",
              "| pair | stream | result |", "|---|---|---|"]
    for pair, stream, verdict in messages_agree(results):
        lines.append(f"| {pair} | {stream} | {verdict} |")
    lines.append("")

    lines += ["## Method", "",
              "- Streams: o200k_harmony ids built with `harmony_plugins.o200k."
              "tiktoken_encoding()`, deterministic (seeded), well-formed gpt-oss output "
              "(prose, markdown, code, non-ASCII text including characters split across "
              "tokens); tokens per stream: " + "; ".join(
                  f"{s} " + ", ".join(f"{v:,}" for v in counts[s].values()) for s in counts)
              + ".",
              "- Text mode (core-text, SGLang): the same ids decoded token by token, special "
              "tokens spelled literally, a character cut between tokens held until complete, "
              "the matched stop `<|return|>` trimmed (SGLang's detokenizer), `<|call|>` kept.",
              "- vLLM: `ParserManager.get_parser(..., is_harmony=True)` with a transformers "
              "tokenizer of o200k_harmony, one parser per request built as "
              "`OpenAIServingChat._make_parser` does, `parse_delta(delta_text, delta_ids, "
              "ChatCompletionRequest(tools=...), finished=...)` per step.",
              "- SGLang: `ReasoningParser(name, stream_reasoning, force_reasoning, request, "
              "tokenizer=, tool_call_parser_active=True)` and `FunctionCallParser(tools, name, "
              "tokenizer=, prefix=, constrained=)` per request; per step the reasoning parser's "
              "normal text goes to the tool parser, `parse_stream_end` on both at the last "
              "step; ServerArgs published first. harmony-ext registered through SGLang's "
              "plugin loader.",
              "- openai_harmony: `StreamableParser.process` per token, then "
              "`last_content_delta`, `current_channel`, `current_recipient` read.",
              "- Each implementation runs in its own process (`scripts/bench_workers.py`), "
              "serially; time = `time.thread_time()` (CPU of the parsing thread), gc on. "
              "A warm-up request on a slice of the stream precedes each cell.",
              ]
    if plot:
        lines += ["", f"![per-token cost against output length]({plot})"]
    path.write_text("\n".join(lines) + "\n")


def write_plot(path: Path, results: dict[str, Any], lengths: list[int]) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no plot",
              file=sys.stderr)
        return False
    colors = {"core-ids": "#1b7837", "core-text": "#5aae61", "openai_harmony": "#762a83",
              "vllm-ext": "#2166ac", "vllm-builtin": "#b2182b", "sglang-ext": "#35978f",
              "sglang-builtin": "#e08214", "sglang-floor": "#999999"}
    fig, axes = plt.subplots(2, 2, figsize=(12, 9), sharex=True, sharey=True)
    for ax, shape in zip(axes.flat, SHAPES, strict=True):
        for impl in IMPLS:
            for size, style in ((1, "-"), (8, ":")):
                pts = [(c["tokens"], c["median_us"]) for c in
                       results.get(impl, {}).get("cells", []) or []
                       if c["shape"] == shape and c["size"] == size and c.get("status") == "ok"]
                if not pts:
                    continue
                xs, ys = zip(*sorted(pts), strict=True)
                ax.plot(xs, ys, style, marker="o" if size == 1 else ".", color=colors[impl],
                        label=f"{impl}, {size}/delta")
                guesses = [(c["tokens"], c["estimate_us"]) for c in
                           results.get(impl, {}).get("cells", []) or []
                           if c["shape"] == shape and c["size"] == size
                           and c.get("estimate_us")]
                if guesses:
                    gx, gy = zip(*sorted(guesses), strict=True)
                    ax.plot((xs[-1], *gx), (ys[-1], *gy), style, color=colors[impl],
                            alpha=0.35, marker="x")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{shape}: {SHAPES[shape]}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_xticks(lengths)
        ax.set_xticklabels([f"{n // K}k" for n in lengths])
    for ax in axes[1]:
        ax.set_xlabel("output length (tokens)")
    for ax in axes[:, 0]:
        ax.set_ylabel("CPU us per token (median)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    for ax in axes.flat[1:]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle("Harmony parsing cost per token (solid: 1 token/delta, dotted: 8; "
                 "faint x: extrapolated, not run)")
    fig.tight_layout(rect=(0, 0.1, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer lengths and repeats "
                    "(a few minutes); writes docs/bench-quick.{md,png}")
    ap.add_argument("--impls", default=",".join(IMPLS),
                    help="comma-separated subset of " + ", ".join(IMPLS))
    ap.add_argument("--out", type=Path, default=None,
                    help="report path (default docs/bench.md, or docs/bench-quick.md)")
    ap.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    ap.add_argument("--lengths", default=None, help="override the lengths, e.g. 1024,4096")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    ap.add_argument("--worktree", action="store_true", help="measure the checkout as it is "
                    "(uncommitted changes included) instead of a snapshot of HEAD")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    conf = config(args.quick)
    if args.lengths:
        conf["lengths"] = [int(x) for x in args.lengths.split(",")]
        conf["ours_extra"] = []
        conf["repeats"].update({n: conf["repeats"].get(n, 3) for n in conf["lengths"]})
        conf["concurrent"]["length"] = min(conf["lengths"])
        conf["memory"]["length"] = max(conf["lengths"])
        conf["memory"]["probe"] = [min(conf["lengths"])]
    impls = [i for i in args.impls.split(",") if i]
    unknown = set(impls) - set(IMPLS)
    if unknown:
        ap.error(f"unknown implementation(s): {', '.join(sorted(unknown))}")
    out = args.out or ROOT / "docs" / ("bench-quick.md" if args.quick else "bench.md")
    tmp = Path(tempfile.mkdtemp(prefix="harmony-bench-"))
    try:
        lengths = sorted(set(conf["lengths"] + conf["ours_extra"]
                             + [conf["memory"]["length"], conf["concurrent"]["length"]]
                             + conf["memory"]["probe"]))
        print(f"building streams: {', '.join(SHAPES)} x {', '.join(str(n) for n in lengths)} "
              "tokens", flush=True)
        streams = tmp / "streams.json"
        counts = write_streams(streams, lengths)
        print(f"  {time.monotonic() - t0:.1f} s", flush=True)
        worker, source = WORKERS, "working tree"
        if not args.worktree:
            try:
                worker, source = snapshot(tmp)
            except (OSError, subprocess.CalledProcessError, tarfile.TarError) as e:
                print(f"no snapshot of HEAD ({e}); measuring the working tree", flush=True)
        print(f"measuring harmony-ext from the {source}", flush=True)
        results: dict[str, Any] = {}
        for impl in impls:
            print(f"== {impl} ({IMPLS[impl][0]})", flush=True)
            start = time.monotonic()
            r = run_worker(impl, streams, worker_plan(impl, conf, not args.no_memory), tmp,
                           conf["worker_timeout_s"], worker, source)
            results[impl] = r
            print(f"   {status_line(r)}; {time.monotonic() - start:.0f} s", flush=True)
        for impl in IMPLS:
            results.setdefault(impl, {"impl": impl, "status": "skipped",
                                      "reason": "not selected (--impls)"})
        elapsed = time.monotonic() - t0
        plot_path = out.with_suffix(".png")
        plotted = write_plot(plot_path, results, sorted(set(conf["lengths"]
                                                             + conf["ours_extra"])))
        write_report(out, results, conf, args.quick, counts, elapsed,
                     plot_path.name if plotted else None, source)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        print(f"wrote {out}" + (f" and {plot_path}" if plotted else "")
              + f" in {elapsed / 60:.1f} min", flush=True)
        for claim, measured, verdict in claims(results, lengths):
            print(f"  [{verdict}] {claim}: {measured}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
