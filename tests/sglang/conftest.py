"""SGLang tests: run with ``.venv-sglang/bin/pytest tests/sglang`` (scripts/setup_sglang_env.sh).

Without an importable ``sglang`` the run fails at collection: the main venv deliberately has
no SGLang and its tier does not collect this folder, and a tier that does must test SGLang
(an import failure turned into a skip would let it pass without). The fixtures drive SGLang's
real ``OpenAIServingChat`` and ``TokenizerManager`` with only the model replaced: scripted
output text arrives on the manager's socket as the detokenizer's would
(:mod:`harmony_ext_testing.sglang_serving`, shared with the page generators): that is how
SGLang's own parsers are reached without a GPU (docs/sglang.md, internals section 7).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sglang  # noqa: F401  (a missing or broken SGLang is an error, never a skip)

# The shared helpers' asserts read as the tests' own (neither module is imported yet).
pytest.register_assert_rewrite("harmony_ext_testing.sglang_cases",
                               "harmony_ext_testing.sglang_round_trips")

from harmony_ext_testing.sglang_serving import (  # noqa: E402
    RunChat,
    chat_runner,
    write_model_dir,
)


@pytest.fixture(scope="session")
def hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real o200k_harmony Hugging Face tokenizer folder, generated offline once."""
    from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer

    return write_hf_tokenizer(tmp_path_factory.mktemp("o200k_hf"))


@pytest.fixture(scope="session")
def gpt_oss_model_dir(hf_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder SGLang accepts: gpt_oss config.json plus the offline o200k tokenizer."""
    return write_model_dir(tmp_path_factory.mktemp("sglang_gpt_oss"), hf_dir)


@pytest.fixture(scope="session", autouse=True)
def sglang_plugins_loaded() -> None:
    """SGLang's own plugin loader, as every SGLang process runs it (registers harmony-ext when
    the package is installed; its hooks act only when a harmony-ext parser is selected)."""
    from sglang.srt.plugins import load_plugins

    load_plugins()


@pytest.fixture(scope="session")
def harmony_server_args(gpt_oss_model_dir: Path) -> Any:
    """ServerArgs selecting both harmony-ext parsers (publish it where the server's choice
    matters)."""
    from sglang.srt.server_args import ServerArgs

    return ServerArgs(
        model_path=str(gpt_oss_model_dir),
        tool_call_parser="harmony-ext",
        reasoning_parser="harmony-ext",
        device="cpu",
    )


@pytest.fixture(scope="session")
def sglang_chat(gpt_oss_model_dir: Path) -> RunChat:
    """SGLang's real chat serving with the model scripted: :func:`chat_runner`."""
    return chat_runner(gpt_oss_model_dir)
