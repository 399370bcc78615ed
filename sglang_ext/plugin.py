"""The ``sglang.srt.plugins`` entry point: register ``harmony-ext`` in every SGLang process.

SGLang's ``load_plugins()`` calls :func:`register` once per process that loads plugins (the
launcher before it parses arguments, the scheduler, the detokenizer), with no arguments and
before the server's configuration is known. So :func:`register` registers names and hooks
unconditionally, and every hook decides at call time whether a ``harmony-ext`` parser is selected;
with other parsers SGLang behaves exactly as without the plugin.

What it installs (docs/sglang.md, "Internals", has the why of each):

* the tool-call detector and the reasoning detector named ``harmony-ext``
  (:mod:`sglang_ext.detectors`), which makes ``--tool-call-parser`` / ``--reasoning-parser``
  accept the name;
* AFTER ``ReasoningParser.__init__`` and ``FunctionCallParser.__init__``: hand our detectors the
  request's tools (SGLang gives reasoning detectors none, and ``has_tool_call`` none);
* BEFORE ``OpenAIServingChat._process_reasoning_stream``, ``_process_tool_call_stream`` and
  ``_build_chat_response``: the response's id, for the per-response log line
  (:mod:`sglang_ext.request_ids`);
* AFTER ``DetokenizerManager.init_running_status``: keep the call stop token in the text
  for ``harmony-ext`` as SGLang does for ``gpt-oss`` (a call cut without it is accepted anyway);
* AROUND ``OpenAIServingChat._render_and_encode_chat_template``: control-token spellings in
  message text are tokenized as text (:mod:`sglang_ext.escaping`);
* AFTER ``prepare_server_args``: with a ``harmony-ext`` parser selected, warn when the
  server will not use it: ``SGLANG_RUST_SERVER`` on (the Rust server parses the output itself),
  or several tokenizer workers on an SGLang whose workers cannot load plugins (0.5.22);
* AFTER ``build_sse_content`` and ``OpenAIServingChat.handle_request``: chat responses carry
  ``reasoning`` beside ``reasoning_content``, equal to it, as vLLM's do
  (:mod:`sglang_ext.reasoning_field`);
* AROUND ``AnthropicServing._convert_response`` and ``_generate_anthropic_stream``: on
  ``/v1/messages`` a call whose arguments are no JSON object is a ``text`` block holding it
  (:mod:`sglang_ext.messages_api`);
* AROUND ``OpenAIServingChat._process_tool_calls`` and ``FunctionCallParser.parse_non_stream``:
  a non-streamed reply without a call, parsed by harmony-ext's tool detector alone, gets the
  parse's content instead of the raw Harmony text (:mod:`sglang_ext.content`);
* AROUND ``OpenAIServingChat._apply_jinja_template``: gpt-oss prompts are rendered with
  ``openai_harmony``, the history as the model wrote it (:mod:`sglang_ext.prompt`), and
  AROUND ``OpenAIServingChat.handle_request``: a message's ``reasoning`` key is kept;
* AROUND ``OpenAIServingResponses.create_responses``, the Harmony contexts' parser factory and
  their ``append_output``: ``/v1/responses`` on gpt-oss parsed by harmony-ext's drop-in for
  openai-harmony's parser, with the request's tools, and AROUND
  ``ResponsesRequest.to_sampling_params``: its generations marked for the generation guard
  (:mod:`sglang_ext.responses`);
* AROUND ``OpenAIServingResponses._construct_input_messages_with_harmony`` and the
  ``parse_response_input`` it calls: input items sent back (or named by
  ``previous_response_id``) rendered as the model wrote them (:mod:`sglang_ext.items`);
* AROUND ``ChatCompletionRequest.to_sampling_params`` and
  ``TokenizerManager._create_tokenized_object``: a JSON response format, with the request's
  tools, under the core's grammar from the first token, on ``/generate`` too
  (:mod:`sglang_ext.grammar`);
* ``Req.update_finish_state`` wrapped in place, where the command line may select
  ``harmony-ext``: the generation guard in the scheduler (:mod:`sglang_ext.guard`);
* ``SGLANG_HTTP_SERVER_APP_PATH`` (when unset): tokenizer workers (``--tokenizer-worker-num``
  > 1) do not load plugins, so they import :mod:`sglang_ext.http_app`, which does.

SGLang older than 0.5.22 (no ``HookRegistry``) is refused with one error line. On 0.5.22, whose
tokenizer workers cannot be pointed at another app, ``python -m sglang_ext.launch_server``
registers, then runs SGLang's own launcher (the workers re-import it).
"""

from __future__ import annotations

import inspect
import logging
import os
import pkgutil
import sys
from collections.abc import Callable
from typing import Any

from harmony_plugins.adapter_support.command_line import may_select
from harmony_plugins.adapter_support.versions import release

from .hook_arguments import argument, signature
from .names import NAME, selected_parser, status

MIN_VERSION = (0, 5, 22)
CHECKED_VERSIONS = ("0.5.22", "0.5.23")
APP_ENV = "SGLANG_HTTP_SERVER_APP_PATH"
APP_PATH = "sglang_ext.http_app:app"

REASONING_INIT = "sglang.srt.parser.reasoning_parser.ReasoningParser.__init__"
TOOL_INIT = "sglang.srt.function_call.function_call_parser.FunctionCallParser.__init__"
DETOKENIZER_INIT = (
    "sglang.srt.managers.detokenizer_manager.DetokenizerManager.init_running_status"
)
PREPARE_ARGS = "sglang.srt.server_args.prepare_server_args"
REQUEST_IDS = "the response's id in the log line"
RESPONSES = "Responses API parsed by harmony-ext"
GUARD = "the generation guard"
ITEMS = "Responses items read back as the model wrote them"
GRAMMAR = "tools and a response schema under one grammar"
REASONING_FIELD = "'reasoning' beside 'reasoning_content' in chat responses"
MESSAGES_API = "/v1/messages: a call whose arguments are no object shown as text"
RUST_SERVER_ENV = "SGLANG_RUST_SERVER"

logger = logging.getLogger("sglang_ext")

_registered = False


def sglang_version() -> str:
    try:
        from importlib.metadata import version

        return version("sglang")
    except Exception:
        import sglang

        return getattr(sglang, "__version__", "unknown")


def check_sglang(version: str) -> str | None:
    """What this SGLang lacks for the parsers to work, or None. Releases before 0.5.22 have
    no ``HookRegistry`` to install the hooks with, and no test tier runs them: refused."""
    if release(version) and release(version) < MIN_VERSION:
        return "older than the oldest release harmony-ext supports"
    try:
        from sglang.srt.function_call.base_format_detector import BaseFormatDetector
        from sglang.srt.function_call.function_call_parser import FunctionCallParser
        from sglang.srt.parser.reasoning_parser import (
            BaseReasoningFormatDetector,
            ReasoningParser,
        )
    except ImportError as e:
        return f"cannot import SGLang's parser registries ({e})"
    try:
        from sglang.srt.plugins import load_plugins  # noqa: F401
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType  # noqa: F401
    except ImportError as e:
        return f"cannot import SGLang's plugin loader and HookRegistry ({e})"
    if not isinstance(getattr(FunctionCallParser, "ToolCallParserEnum", None), dict):
        return "FunctionCallParser.ToolCallParserEnum is not a dict"
    if not isinstance(getattr(ReasoningParser, "DetectorMap", None), dict):
        return "ReasoningParser.DetectorMap is not a dict"
    for owner, attrs in (
        (BaseFormatDetector, ("parse_streaming_increment", "detect_and_parse",
                              "has_tool_call", "finish", "get_structural_tag_name")),
        (BaseReasoningFormatDetector, ("parse_streaming_increment", "detect_and_parse",
                                       "finish")),
    ):
        for attr in attrs:
            if not hasattr(owner, attr):
                return f"{owner.__name__}.{attr} does not exist"
    if "request" not in inspect.signature(ReasoningParser.__init__).parameters:
        return "ReasoningParser.__init__ takes no request (needed to give the parse its tools)"
    return None


def register() -> None:
    """Entry point: register the ``harmony-ext`` names and hooks, or log why not. Idempotent."""
    global _registered
    if _registered:
        logger.debug("harmony-ext: already registered in this process")
        return
    version = sglang_version()
    problem = check_sglang(version)
    if problem:
        status["enabled"] = f"no: {problem}"
        logger.error("harmony-ext: not enabled on SGLang %s: %s. The parser name %r is not "
                     "registered; supported: SGLang %s and newer.", version, problem, NAME,
                     ".".join(map(str, MIN_VERSION)))
        return
    _registered = True
    register_names()
    status["enabled"] = f"yes, SGLang {version}"
    hooks = install_hooks()
    status.update(hooks)
    status[GUARD] = install_guard(sys.argv)
    status["tokenizer workers"] = point_workers_at_our_app()
    logger.info("harmony-ext: registered tool-call and reasoning parser %r on SGLang %s; %s",
                NAME, version, "; ".join(f"{k}: {v}" for k, v in status.items()))


def register_names() -> None:
    """Put both detectors in SGLang's registries (argparse takes its choices from them)."""
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    from .detectors import HarmonyExtDetector, HarmonyExtReasoningDetector

    FunctionCallParser.ToolCallParserEnum[NAME] = HarmonyExtDetector
    ReasoningParser.DetectorMap[NAME] = HarmonyExtReasoningDetector
    # The static name lists, used while the registries are not imported (cheap argparse).
    for module, attr in (("sglang.srt.function_call.parser_names", "TOOL_CALL_PARSER_NAMES"),
                         ("sglang.srt.parser.reasoning_parser_names", "REASONING_PARSER_NAMES")):
        try:
            names = getattr(pkgutil.resolve_name(module), attr)
        except Exception:
            continue
        if isinstance(names, list) and NAME not in names:
            names.append(NAME)


# -- hooks -----------------------------------------------------------------------------------


def bind_reasoning_request(result: Any, *args: Any, **kwargs: Any) -> None:
    """AFTER ``ReasoningParser.__init__``: give our detector the request (for its tools)."""
    from .detectors import HarmonyExtReasoningDetector

    parser = args[0] if args else None
    detector = getattr(parser, "detector", None)
    if isinstance(detector, HarmonyExtReasoningDetector):
        request = argument(REASONING_INIT, "request", args, kwargs)
        if request is not None:
            detector.bind_request(request)


def bind_tool_parser_tools(result: Any, *args: Any, **kwargs: Any) -> None:
    """AFTER ``FunctionCallParser.__init__``: give our detector the tools (for has_tool_call)."""
    from .detectors import HarmonyExtDetector

    parser = args[0] if args else None
    detector = getattr(parser, "detector", None)
    if isinstance(detector, HarmonyExtDetector):
        detector.bind_tools(getattr(parser, "tools", None))


def keep_call_token(result: Any, *args: Any, **kwargs: Any) -> None:
    """AFTER ``DetokenizerManager.init_running_status``: keep the call stop token for
    harmony-ext (engine glue: SGLang keeps it only for its own gpt-oss parser's name)."""
    manager = args[0] if args else None
    selected = selected_parser("tool_call_parser")
    if selected is None:  # no published config: fall back to the arguments given
        server_args = argument(DETOKENIZER_INIT, "server_args", args, kwargs)
        selected = getattr(server_args, "tool_call_parser", None)
    if selected == NAME and manager is not None:
        manager.is_tool_call_parser_gpt_oss = True


def rust_server_on() -> bool:
    """Whether SGLang serves through its Rust server, read as SGLang reads it (``envs``)."""
    try:
        from sglang.srt.environ import envs

        return bool(getattr(envs, RUST_SERVER_ENV).get())
    except Exception:  # an SGLang without a Rust server
        return False


def warn_if_bypassed(result: Any, *args: Any, **kwargs: Any) -> None:
    """AFTER ``prepare_server_args``: say so when the server will not use harmony-ext."""
    selected = [f"--{kind.replace('_', '-')}" for kind in ("tool_call_parser", "reasoning_parser")
                if getattr(result, kind, None) == NAME]
    if not selected:
        return
    if rust_server_on():
        logger.warning("harmony-ext: %s=1: SGLang's Rust server parses gpt-oss output itself, "
                       "so harmony-ext's parser is not in use (selected as %s); unset %s to "
                       "use it.", RUST_SERVER_ENV, " and ".join(selected), RUST_SERVER_ENV)
    workers = getattr(result, "tokenizer_worker_num", 1)
    if isinstance(workers, int) and workers > 1 and not workers_load_plugins():
        logger.warning("harmony-ext: --tokenizer-worker-num %d on SGLang %s: its HTTP workers "
                       "import SGLang's app without loading plugins, so they do not know %r; "
                       "start through python -m sglang_ext.launch_server instead.", workers,
                       sglang_version(), NAME)


def workers_load_plugins() -> bool:
    """Whether SGLang's tokenizer workers will have harmony-ext: SGLang imports the app named by
    ``SGLANG_HTTP_SERVER_APP_PATH`` (0.5.23; :func:`point_workers_at_our_app`), or this process
    was started by ``python -m sglang_ext.launch_server``, whose module the workers re-import."""
    try:
        from sglang.srt.environ import envs
    except ImportError:
        envs = None
    if envs is not None and hasattr(envs, APP_ENV):
        return True
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == "sglang_ext.launch_server"


def _hook_points() -> list[tuple[str, str, Callable[..., Any], str, str | None]]:
    """(what, target, hook, kind, why missing) for each hook."""
    from .content import PARSE_NON_STREAM, PROCESS_TOOL_CALLS, show_content, show_content_parsed
    from .escaping import TARGET as RENDER
    from .escaping import render_and_encode
    from .prompt import HANDLE, apply_template, carry_reasoning
    from .prompt import TARGET as APPLY_TEMPLATE

    points = [
        ("tools to the reasoning parse", REASONING_INIT, bind_reasoning_request, "AFTER"),
        ("tools to has_tool_call", TOOL_INIT, bind_tool_parser_tools, "AFTER"),
        ("keep the call stop token", DETOKENIZER_INIT, keep_call_token, "AFTER"),
        ("prompt control tokens as text", RENDER, render_and_encode, "AROUND"),
        ("warn when the server will not use it", PREPARE_ARGS, warn_if_bypassed, "AFTER"),
        ("gpt-oss prompts rendered as Harmony", APPLY_TEMPLATE, apply_template, "AROUND"),
        ("'reasoning' kept in messages", HANDLE, carry_reasoning, "AROUND"),
        ("content of a reply without a call", PROCESS_TOOL_CALLS, show_content, "AROUND"),
        ("content of a parse without a call", PARSE_NON_STREAM, show_content_parsed, "AROUND"),
    ]
    out = []
    for what, target, hook, kind in points:
        out.append((what, target, hook, kind, _missing(target)))
    from . import messages_api, reasoning_field, request_ids

    for what, module in ((REQUEST_IDS, request_ids), (REASONING_FIELD, reasoning_field),
                         (MESSAGES_API, messages_api)):
        out += _module_points(what, module)
    # The Responses API: several hooks that work together, so all or none (one line if none).
    try:
        from . import responses
    except ImportError as e:
        out.append((RESPONSES, "harmony_plugins.compat", lambda *a, **k: None, "AROUND",
                    f"the core's drop-in parser is not importable ({e})"))
        return out
    from . import grammar, items

    for what, module in ((RESPONSES, responses), (ITEMS, items), (GRAMMAR, grammar)):
        out += _module_points(what, module)
    return out


def _module_points(what: str, module: Any) -> list[tuple[str, str, Callable[..., Any], str,
                                                          str | None]]:
    """A hook module's points (its ``hook_points()``), each with the one reason its
    ``problem()`` gives for the module's hooks, all or none."""
    why = module.problem()
    return [(what, target, hook, kind, why) for target, hook, kind in module.hook_points()]


def _missing(target: str) -> str | None:
    """Why a hook target cannot be used, or None. Its signature is read here, once for the
    process (:func:`sglang_ext.hook_arguments.signature`), for the hook to read its
    arguments by."""
    from .escaping import TARGET as RENDER

    try:
        params = signature(target).parameters
    except Exception as e:
        return f"{target} not found ({type(e).__name__}: {e})"
    if target == DETOKENIZER_INIT:
        from sglang.srt.managers.detokenizer_manager import DetokenizerManager

        trim = getattr(DetokenizerManager, "trim_matched_stop", None)
        if "is_tool_call_parser_gpt_oss" not in getattr(getattr(trim, "__code__", None),
                                                        "co_names", ()):
            return ("DetokenizerManager.trim_matched_stop no longer reads "
                    "is_tool_call_parser_gpt_oss")
    if target == RENDER and not {"messages", "tools", "template_kwargs",
                                 "encode_kwargs"} <= set(params):
        return f"{target} has an unknown signature"
    return None


def install_guard(argv: list[str]) -> str:
    """The generation guard's wrap in the scheduler (:mod:`sglang_ext.guard`), where the
    command line may select harmony-ext; or one log line saying why not. Its status."""
    from . import guard

    if not may_select(argv, NAME):
        return "off (the command line does not select harmony-ext)"
    problem = guard.check()
    if problem:
        logger.warning("harmony-ext: %s: %s.", guard.OFF, problem)
        return f"off ({problem})"
    guard.install()
    return "on"


def wrapped_targets() -> tuple[str, ...]:
    """Every SGLang function this adapter wraps in place (the rest go through HookRegistry)."""
    from . import guard

    return guard.WRAPS


_given: set[tuple[str, Callable[..., Any]]] = set()
"""(target, hook) pairs handed to HookRegistry by this process, which keeps duplicates."""


def install_hooks() -> dict[str, str]:
    """Register the hooks with SGLang's HookRegistry (applied by load_plugins), once each."""
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    done: dict[str, str] = {}
    for what, target, hook, kind, missing in _hook_points():
        if missing:
            if what not in done:  # one line per hook point, however many targets it has
                logger.warning("harmony-ext: hook %r not installed: %s", what, missing)
            done[what] = f"off ({missing})"
            continue
        if (target, hook) not in _given:
            HookRegistry.register(target, hook, getattr(HookType, kind))
            _given.add((target, hook))
        done[what] = "on"
    return done


def point_workers_at_our_app() -> str:
    """Make multi-worker HTTP servers import an app that loads plugins first."""
    try:
        from sglang.srt.environ import envs
    except ImportError:
        envs = None
    if envs is None or not hasattr(envs, APP_ENV):
        return ("not covered: this SGLang has no SGLANG_HTTP_SERVER_APP_PATH; with "
                "--tokenizer-worker-num > 1 start through python -m sglang_ext.launch_server")
    current = os.environ.get(APP_ENV)
    if current is None:
        os.environ[APP_ENV] = APP_PATH
        return f"{APP_ENV}={APP_PATH}"
    if current == APP_PATH:
        return f"{APP_ENV}={APP_PATH}"
    logger.warning("harmony-ext: %s is set to %r; with --tokenizer-worker-num > 1 that app "
                   "must call sglang.srt.plugins.load_plugins() before serving, or the "
                   "harmony-ext names are unknown in the workers.", APP_ENV, current)
    return f"{APP_ENV} left at {current!r} (must load plugins)"


def ensure_loaded() -> None:
    """Register through SGLang's plugin loader (all plugins, hooks applied), and ourselves
    where the loader skipped us."""
    from sglang.srt.plugins import load_plugins

    load_plugins()
    if not _registered:  # our entry point is filtered out or not installed
        register()
        from sglang.srt.plugins.hook_registry import HookRegistry

        HookRegistry.apply_hooks()
