"""The scripted model's harness on the installed vLLM: which logits processor and which model
runner its test servers get (harmony_ext_testing/vllm_runner.py), and tests/e2e_vllm on a vLLM
that has neither logits-processor interface: collected, every server test skipped with the
reason, no import error. Expected choices written from each version's code: 0.32 and 0.33 run
their V1 runner on this CPU (their V2 runner requires Triton), 0.34 has only the V2 runner and
refuses an x86 CPU without Triton (``platforms/cpu.py``), so its servers run the scripted
worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(the vLLM tiers run these)")

from harmony_ext_testing import vllm_scripted  # noqa: E402
from harmony_ext_testing.vllm_runner import choose, missing  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MINOR = tuple(int(part) for part in vllm.__version__.split(".")[:2])


def test_this_vllm_gets_the_runner_it_has() -> None:
    assert missing() is None
    if MINOR in ((0, 32), (0, 33)):
        assert choose() == ("ScriptedOutputProcessorV1", "model")
    else:
        from vllm.triton_utils import HAS_TRITON

        assert MINOR == (0, 34)
        assert choose() == ("ScriptedOutputProcessor", "model" if HAS_TRITON else "scripted")
    processor, _ = choose()
    assert isinstance(getattr(vllm_scripted, processor), type)


def test_the_v2_processor_is_what_vllm_s_v2_loader_takes() -> None:
    """Every supported vLLM has the V2 interface; its loader accepts the class by name."""
    from vllm.v1.worker.gpu.sample.logits_processor import loader

    name = "harmony_ext_testing.vllm_scripted:ScriptedOutputProcessor"
    assert loader._load_v2_logitsprocs_by_fqcns([name]) == [
        vllm_scripted.ScriptedOutputProcessor]
    validate = loader.build_custom_logits_processors_params_validator([name])
    from vllm import SamplingParams
    from vllm.exceptions import VLLMValidationError

    validate(SamplingParams(extra_args={"script_ids": "[1, 2]"}))
    with pytest.raises(VLLMValidationError, match="scripted output: script_ids is empty"):
        validate(SamplingParams(extra_args={"script_ids": "[]"}))


def test_without_either_interface_the_server_tests_are_skipped_at_collection(
        tmp_path: Path) -> None:
    """A vLLM package with neither interface (written into tmp_path, ahead of the installed
    one): the e2e modules import, and every test is skipped saying why."""
    fake = tmp_path / "vllm"
    fake.mkdir()
    (fake / "__init__.py").write_text('__version__ = "9.9.0"\n')
    (fake / "exceptions.py").write_text(
        "class VLLMValidationError(ValueError):\n"
        "    def __init__(self, message, parameter=None, value=None):\n"
        "        super().__init__(message)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
         "tests/e2e_vllm/test_scripted_server.py", "tests/e2e_vllm/test_responses_round_trip.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " skipped" in summary and "passed" not in summary and "error" not in summary, summary
    assert "this vLLM has neither logits-processor interface the scripted model uses" in (
        done.stdout)
