"""Registration of harmony-ext in SGLang: names, argument parsing, hooks, launcher, workers.

Runs on SGLang's own code: ``load_plugins()`` (session fixture in conftest),
``prepare_server_args``, ``HookRegistry``, a real ``DetokenizerManager``, and
fresh interpreters for what only a new process shows (the launcher, spawned children, tokenizer
workers).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser
from sglang.srt.plugins.hook_registry import HookRegistry

from sglang_ext import hook_arguments, plugin
from sglang_ext.content import PARSE_NON_STREAM, PROCESS_TOOL_CALLS
from sglang_ext.detectors import HarmonyExtDetector, HarmonyExtReasoningDetector
from sglang_ext.escaping import TARGET as RENDER

NAME = "harmony-ext"
ROOT = Path(__file__).resolve().parents[2]


def test_names_resolve_after_load_plugins() -> None:
    assert FunctionCallParser.ToolCallParserEnum[NAME] is HarmonyExtDetector
    assert ReasoningParser.DetectorMap[NAME] is HarmonyExtReasoningDetector
    assert isinstance(FunctionCallParser([], NAME).detector, HarmonyExtDetector)
    assert isinstance(ReasoningParser(NAME).detector, HarmonyExtReasoningDetector)
    assert plugin.status["enabled"].startswith("yes")
    for item in ("tools to the reasoning parse", "tools to has_tool_call",
                 "keep the call stop token", "prompt control tokens as text",
                 "warn when the server will not use it", "content of a reply without a call",
                 "content of a parse without a call"):
        assert plugin.status[item] == "on", (item, plugin.status)


def wrapper_depth(func: Any) -> int:
    depth = 0
    while hasattr(func, "__wrapped__"):
        func, depth = func.__wrapped__, depth + 1
    return depth


def test_register_again_changes_nothing() -> None:
    from sglang.srt.plugins import load_plugins

    targets = [plugin.REASONING_INIT, plugin.TOOL_INIT, plugin.DETOKENIZER_INIT, RENDER,
               plugin.PREPARE_ARGS, PROCESS_TOOL_CALLS, PARSE_NON_STREAM]
    before = {t: len(HookRegistry._hooks[t]) for t in targets}
    plugin.register()
    plugin._registered = False  # as if a second copy of the entry point ran
    plugin.register()
    load_plugins()
    HookRegistry.apply_hooks()
    assert {t: len(HookRegistry._hooks[t]) for t in targets} == before == dict.fromkeys(targets, 1)
    assert wrapper_depth(ReasoningParser.__init__) == 1


def test_refuses_and_says_why_when_a_hook_point_is_missing(monkeypatch, caplog) -> None:
    monkeypatch.setattr(ReasoningParser, "DetectorMap", list(ReasoningParser.DetectorMap))
    monkeypatch.setattr(plugin, "_registered", False)
    monkeypatch.setattr(plugin, "status", {})
    with caplog.at_level(logging.ERROR, logger="sglang_ext"):
        plugin.register()
    assert "ReasoningParser.DetectorMap is not a dict" in caplog.text
    assert plugin.status["enabled"].startswith("no:")
    assert plugin._registered is False


def test_refuses_sglang_older_than_0_5_22_in_one_line(monkeypatch, caplog) -> None:
    """No HookRegistry before 0.5.22, and no tier runs one: refused, not patched around."""
    monkeypatch.setattr(plugin, "sglang_version", lambda: "0.5.21")
    monkeypatch.setattr(plugin, "_registered", False)
    monkeypatch.setattr(plugin, "status", {})
    with caplog.at_level(logging.DEBUG, logger="sglang_ext"):
        plugin.register()
    assert [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "sglang_ext"] == [
        (logging.ERROR, "harmony-ext: not enabled on SGLang 0.5.21: older than the oldest "
         "release harmony-ext supports. The parser name 'harmony-ext' is not registered; "
         "supported: SGLang 0.5.22 and newer.")]
    assert plugin.status == {
        "enabled": "no: older than the oldest release harmony-ext supports"}
    assert plugin._registered is False


def test_version_check() -> None:
    assert plugin.release("0.5.23") == (0, 5, 23)
    assert plugin.release("0.5.22rc1") == (0, 5, 22)
    assert plugin.release("0.5.9.post2") == (0, 5, 9)
    assert plugin.release("0.5.21") < plugin.MIN_VERSION <= plugin.release("0.6")
    assert plugin.release(plugin.sglang_version()) >= plugin.MIN_VERSION


def test_launch_server_argument_parsing_accepts_harmony_ext(gpt_oss_model_dir: Path) -> None:
    from sglang.srt.server_args import prepare_server_args

    args = prepare_server_args(["--model-path", str(gpt_oss_model_dir), "--tool-call-parser",
                                NAME, "--reasoning-parser", NAME])
    assert (args.tool_call_parser, args.reasoning_parser) == (NAME, NAME)
    with pytest.raises(SystemExit):
        prepare_server_args(["--model-path", str(gpt_oss_model_dir),
                             "--tool-call-parser", "harmony-nope"])


class Records(logging.Handler):
    """Collects the ``sglang_ext`` logger's records (``prepare_server_args`` reconfigures the
    root logger with ``force=True``, which drops pytest's capture handler)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def logged_by_prepare_server_args(argv: list[str]) -> list[logging.LogRecord]:
    """What ``sglang_ext`` logs while SGLang's ``prepare_server_args(argv)`` runs."""
    from sglang.srt.server_args import prepare_server_args

    records = Records()
    logging.getLogger("sglang_ext").addHandler(records)
    try:
        prepare_server_args(argv)
    finally:
        logging.getLogger("sglang_ext").removeHandler(records)
    return records.records


@pytest.mark.parametrize("rust, tool, reasoning, expected", [
    ("1", NAME, NAME, "selected as --tool-call-parser and --reasoning-parser"),
    ("true", "gpt-oss", NAME, "selected as --reasoning-parser"),
    ("1", NAME, None, "selected as --tool-call-parser"),
    ("1", "gpt-oss", "gpt-oss", None),
    ("0", NAME, NAME, None),
    (None, NAME, NAME, None),
])
def test_says_when_sglangs_rust_server_bypasses_harmony_ext(
        gpt_oss_model_dir: Path, monkeypatch, rust: str | None, tool: str, reasoning: str | None,
        expected: str | None) -> None:
    if rust is None:
        monkeypatch.delenv("SGLANG_RUST_SERVER", raising=False)
    else:
        monkeypatch.setenv("SGLANG_RUST_SERVER", rust)
    argv = ["--model-path", str(gpt_oss_model_dir), "--tool-call-parser", tool]
    if reasoning:
        argv += ["--reasoning-parser", reasoning]
    said = [r for r in logged_by_prepare_server_args(argv)
            if "SGLANG_RUST_SERVER" in r.getMessage()]
    if expected is None:
        assert said == []
    else:
        assert [r.levelno for r in said] == [logging.WARNING]
        assert "harmony-ext's parser is not in use" in said[0].getMessage()
        assert expected in said[0].getMessage()


@pytest.mark.parametrize("main", ["sglang.launch_server", "sglang_ext.launch_server"])
def test_says_when_tokenizer_workers_cannot_load_harmony_ext(gpt_oss_model_dir: Path,
                                                             monkeypatch, main: str) -> None:
    monkeypatch.delenv("SGLANG_RUST_SERVER", raising=False)
    monkeypatch.setattr(sys.modules["__main__"], "__spec__", SimpleNamespace(name=main))
    said = [r for r in logged_by_prepare_server_args(
        ["--model-path", str(gpt_oss_model_dir), "--tool-call-parser", NAME,
         "--reasoning-parser", NAME, "--tokenizer-worker-num", "2"])
        if "--tokenizer-worker-num" in r.getMessage()]
    if plugin.release(plugin.sglang_version()) >= (0, 5, 23) or main.startswith("sglang_ext"):
        # 0.5.23 runs the app SGLANG_HTTP_SERVER_APP_PATH names (ours); our launcher's module
        # is re-imported by the workers.
        assert said == []
    else:
        assert [r.levelno for r in said] == [logging.WARNING]
        assert "python -m sglang_ext.launch_server" in said[0].getMessage()


# -- <|call|>: SGLang's detokenizer keeps it for harmony-ext as for gpt-oss --------------------


@pytest.mark.parametrize("parser, kept", [(NAME, True), ("gpt-oss", True), ("pythonic", False)])
def test_detokenizer_keeps_call_token_for_harmony_ext(gpt_oss_model_dir: Path, parser: str,
                                                      kept: bool) -> None:
    from sglang.srt.managers.detokenizer_manager import DetokenizerManager
    from sglang.srt.runtime_context import publish
    from sglang.srt.server_args import PortArgs, ServerArgs

    # skip_tokenizer_init: a real option that spares loading the tokenizer (trimming the stop
    # token reads only the ids and the server's arguments)
    args = ServerArgs(model_path=str(gpt_oss_model_dir), tool_call_parser=parser, device="cpu",
                      skip_tokenizer_init=True)
    publish(args, role="detokenizer")
    ports = PortArgs.init_new(args)  # fresh ipc names: the sockets need no peer to be made
    manager = DetokenizerManager(args, ports)  # the real one, as the detokenizer process builds it
    try:
        call = manager.trim_matched_stop([9906, 200012], {"type": "stop", "matched": 200012},
                                         False)
        assert call == ([9906, 200012] if kept else [9906])
        # <|return|> is always cut, as before.
        assert manager.trim_matched_stop([9906, 200002], {"type": "stop", "matched": 200002},
                                         False) == [9906]
    finally:
        for name in ("recv_from_scheduler", "send_to_tokenizer"):
            if hasattr(manager, name):
                getattr(manager, name).close(linger=0)
        for name, address in vars(ports).items():  # the files PortArgs made for its names
            if name.endswith("ipc_name") and str(address).startswith("ipc://"):
                Path(address.removeprefix("ipc://")).unlink(missing_ok=True)


# -- fresh processes: the launcher, spawned children, tokenizer workers ------------------------


def run_python(code: str, *args: str, env: dict[str, str] | None = None,
               module: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", module, *args] if module else [sys.executable, "-c", code]
    full_env = {**os.environ, **(env or {})}
    full_env.pop(plugin.APP_ENV, None)
    full_env.update(env or {})
    return subprocess.run(command, capture_output=True, text=True, env=full_env, cwd=ROOT,
                          timeout=240)


# SGLANG_PLUGINS naming another plugin: SGLang's loader skips ours, so only our own modules
# can register harmony-ext in these processes.
NOT_OURS = {"SGLANG_PLUGINS": "some-other-plugin"}


def test_launcher_registers_before_sglang_parses_arguments() -> None:
    ours = run_python("", "--help", env=NOT_OURS, module="sglang_ext.launch_server")
    assert ours.returncode == 0, ours.stderr[-2000:]
    assert NAME in ours.stdout
    theirs = run_python("", "--help", env=NOT_OURS, module="sglang.launch_server")
    assert theirs.returncode == 0 and NAME not in theirs.stdout


def test_children_spawned_by_the_launcher_register() -> None:
    """multiprocessing's spawn re-imports the main module as __mp_main__ in every child."""
    code = (
        "import runpy\n"
        "runpy.run_module('sglang_ext.launch_server', run_name='__mp_main__')\n"
        "from sglang.srt.function_call.function_call_parser import FunctionCallParser as F\n"
        "from sglang.srt.parser.reasoning_parser import ReasoningParser as R\n"
        "print('tool' if 'harmony-ext' in F.ToolCallParserEnum else '-',\n"
        "      'reasoning' if 'harmony-ext' in R.DetectorMap else '-',\n"
        "      'hooked' if hasattr(R.__init__, '__wrapped__') else '-')\n"
    )
    result = run_python(code, env=NOT_OURS)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["tool", "reasoning", "hooked"]


def test_register_points_tokenizer_workers_at_an_app_that_loads_plugins(monkeypatch) -> None:
    monkeypatch.delenv(plugin.APP_ENV, raising=False)
    if plugin.release(plugin.sglang_version()) < (0, 5, 23):
        # SGLang 0.5.22's workers import "sglang.srt.entrypoints.http_server:app", a fixed name:
        # the plugin says so and changes nothing (the README points to sglang_ext.launch_server).
        assert plugin.point_workers_at_our_app() == (
            "not covered: this SGLang has no SGLANG_HTTP_SERVER_APP_PATH; with "
            "--tokenizer-worker-num > 1 start through python -m sglang_ext.launch_server")
        assert plugin.APP_ENV not in os.environ
        return
    assert plugin.point_workers_at_our_app() == f"{plugin.APP_ENV}={plugin.APP_PATH}"
    assert os.environ[plugin.APP_ENV] == plugin.APP_PATH
    from sglang.srt.environ import envs

    assert envs.SGLANG_HTTP_SERVER_APP_PATH.get() == plugin.APP_PATH  # what SGLang will launch
    monkeypatch.setenv(plugin.APP_ENV, "my_app:app")
    assert "left at 'my_app:app'" in plugin.point_workers_at_our_app()
    assert os.environ[plugin.APP_ENV] == "my_app:app"


HTTP_SERVER_DEPS = ("soundfile", "multipart")  # imported by sglang's http_server, not by parsers


def test_tokenizer_worker_imports_sglangs_app_with_harmony_ext_registered() -> None:
    """What a uvicorn/granian worker does: import the app string, in a fresh interpreter."""
    import importlib.util

    absent = [m for m in HTTP_SERVER_DEPS if importlib.util.find_spec(m) is None]
    if absent:
        pytest.skip(f"sglang.srt.entrypoints.http_server needs {absent} (pip packages "
                    "soundfile, python-multipart), which this venv lacks")
    code = (
        "import os\n"
        "from uvicorn.importer import import_from_string\n"
        f"app = import_from_string({plugin.APP_PATH!r})\n"
        "from sglang.srt.entrypoints.http_server import app as sglang_app\n"
        "from sglang.srt.function_call.function_call_parser import FunctionCallParser as F\n"
        "from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat as S\n"
        "print(app is sglang_app, 'harmony-ext' in F.ToolCallParserEnum,\n"
        "      hasattr(S._render_and_encode_chat_template, '__wrapped__'))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True", "True", "True"]
    # The same import without our module: SGLang's app alone has no harmony-ext there.
    bare = run_python(code.replace(repr(plugin.APP_PATH),
                                   "'sglang.srt.entrypoints.http_server:app'"), env=NOT_OURS)
    assert bare.returncode == 0, bare.stderr[-2000:]
    assert bare.stdout.split() == ["True", "False", "False"]


# -- the GPU suite's output forcing (harmony_ext_testing.sglang_scripted), checked on the CPU --


def test_scripted_logit_processor_forces_the_script() -> None:
    import dill
    import torch
    from sglang.srt.sampling.custom_logit_processor import CustomLogitProcessor

    from harmony_ext_testing.sglang_scripted import RETURN_ID, ScriptedLogitProcessor

    # SGLang ships the class by reference (the server imports it from the checkout).
    payload = dill.dumps(ScriptedLogitProcessor)
    assert b"harmony_ext_testing.sglang_scripted" in payload and len(payload) < 200
    processor = CustomLogitProcessor.from_str(ScriptedLogitProcessor.to_str())
    assert isinstance(processor, ScriptedLogitProcessor)

    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.sampling.sampling_params import SamplingParams

    def progress(*ids: int) -> Any:  # SGLang's own Req, with the ids generated so far
        req = Req("r1", "", [1, 2], SamplingParams())
        req.output_ids = list(ids)
        return req

    logits = torch.zeros(3, 201088)
    out = processor(logits, [
        {"script_ids": [7, 8, 9], "__req__": progress(1)},  # step 1: token 8
        {"script_ids": [7], "__req__": progress(1, 2)},  # past the script: <|return|>
        None,  # a request without a script: untouched
    ])
    assert out[0].argmax().item() == 8 and torch.isinf(out[0]).sum().item() == 201087
    assert out[1].argmax().item() == RETURN_ID
    assert torch.equal(out[2], torch.zeros(201088))


def test_an_sglang_without_the_parser_modules_gets_the_log_line_not_an_import_error() -> None:
    """The plugin imports nothing that needs SGLang's parser modules before checking them."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.ERROR, format='%(message)s')\n"
        "sys.modules['sglang.srt.function_call.base_format_detector'] = None\n"
        "from sglang_ext import plugin\n"
        "plugin.register()\n"
        "print('detectors imported:', 'sglang_ext.detectors' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=root, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "detectors imported: False" in done.stdout
    assert "harmony-ext: not enabled on SGLang" in done.stderr
    assert "cannot import SGLang's parser registries" in done.stderr


# -- what a served request costs the hooks ------------------------------------------------------

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "strict": True,
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}
JSON_FORMAT = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {
    "type": "object", "properties": {"temp": {"type": "integer"}}}}}


def signatures_read(sglang_chat: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The modules of harmony-ext's SGLang adapter that called ``inspect.signature`` while
    SGLang's chat serving served requests that pass every chat hook: a response format with
    tools (the grammar's two hooks), streamed (the request id's per-step hooks) and not, with
    the raw request (the ``reasoning`` hook), and one rendered by SGLang's chat template with a
    control token's spelling in a message (the escaping hook)."""
    import inspect

    callers: list[str] = []
    signature = inspect.signature

    def counted(*args: Any, **kwargs: Any) -> Any:
        callers.append(sys._getframe(1).f_globals.get("__name__", "?"))
        return signature(*args, **kwargs)

    monkeypatch.setattr(inspect, "signature", counted)
    answer = '<|channel|>final<|message|>{"temp": 20}<|return|>'
    for stream in (False, True):
        result = sglang_chat([answer.removesuffix("<|return|>")], stream=stream, tool_parser=NAME,
                             reasoning_parser=NAME, tools=[WEATHER_TOOL], send_raw=True,
                             response_format=JSON_FORMAT)
        assert result.requests and result.requests[0].sampling_params.structural_tag
    monkeypatch.setenv("HARMONY_EXT_CHAT_TEMPLATE", "1")
    spelled = [{"role": "user", "content": "Say <|start|>user please."}]
    assert sglang_chat(["<|channel|>final<|message|>Hi."], stream=False, tool_parser=NAME,
                       reasoning_parser=NAME, messages=spelled).requests
    monkeypatch.delenv("HARMONY_EXT_CHAT_TEMPLATE")
    return [caller for caller in callers if caller.startswith("sglang_ext")]


def test_no_hook_reads_a_signature_per_request(sglang_chat, monkeypatch) -> None:
    """Each hook reads its arguments through the one cached reader, which read every target's
    signature when the plugin installed the hooks (the control: with its cache emptied, the
    same requests read them again, through it alone)."""
    assert signatures_read(sglang_chat, monkeypatch) == []
    hook_arguments.signature.cache_clear()
    hook_arguments.positions.cache_clear()
    try:
        read = signatures_read(sglang_chat, monkeypatch)
    finally:
        plugin._hook_points()  # read again, as at start-up
    assert read and set(read) == {"sglang_ext.hook_arguments"}
