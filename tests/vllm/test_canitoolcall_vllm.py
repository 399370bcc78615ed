"""canitoolcall's gpt-oss fixtures through vLLM's parser path with harmony-ext selected: the
class vLLM's ``ParserManager`` composes, a chat request adjusted by it, text from vLLM's own
incremental detokenizer, ``parse`` and ``parse_delta`` as vLLM's chat serving calls them, in
each of canitoolcall's chunkings, judged by its ``assert_conforms``
(:class:`harmony_ext_testing.conformance.VllmReplay`). Runs in both vLLM tiers.

A fixture the contract decides otherwise is a strict expected failure whose reason names the
section, and its parse is held to the contract's answer.
"""

from __future__ import annotations

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(run with .venv-vllm/bin/pytest after scripts/setup_vllm_env.sh)")

from harmony_ext_testing import conformance  # noqa: E402

ENGINE = "vllm"
FIXTURES = conformance.fixtures()


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> conformance.VllmReplay:
    return conformance.VllmReplay(conformance.model_folder(tmp_path_factory.mktemp("gpt_oss")))


def test_the_pinned_release_and_harmony_ext_s_parser(replay: conformance.VllmReplay) -> None:
    from vllm_ext.harmony_parser import HarmonyExtParser

    assert conformance.check_pinned() == conformance.PINNED
    assert len(FIXTURES) == 51
    assert issubclass(replay.parser_cls, HarmonyExtParser)  # what vLLM composed for the names


@pytest.mark.parametrize("fixture", conformance.cases(ENGINE))
def test_the_fixture_conforms(replay: conformance.VllmReplay, fixture) -> None:
    assert conformance.problems(fixture, *conformance.observe(replay, fixture)) == []


@pytest.mark.parametrize("fixture_id", conformance.decided_ids(ENGINE))
def test_a_fixture_the_contract_decides_gets_the_contract_s_answer(
        replay: conformance.VllmReplay, fixture_id: str) -> None:
    whole, streams, want = conformance.against_contract(replay, fixture_id)
    assert whole == want
    assert {strategy: want for strategy in streams} == streams
