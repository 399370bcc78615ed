"""What harmony-ext does to the generation on vLLM (contract section 10), on vLLM's own classes:
Harmony's stop ids merged into every request vLLM adjusts with harmony-ext's parser (chat and
Responses), a request with ``ignore_eos`` left alone, and the sampling parameters vLLM builds
from the request carrying them. Expected ids written from the contract's table (section 1:
``<|return|>`` 200002, ``<|call|>`` 200012)."""

from __future__ import annotations

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(the vLLM tiers run these)")

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.entrypoints.openai.responses.protocol import ResponsesRequest  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402

from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer  # noqa: E402
from vllm_ext import plugin  # noqa: E402

RETURN, CALL = 200002, 200012


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(write_hf_tokenizer(tmp_path_factory.mktemp("t"))))


def parser(tokenizer, names: tuple[str, str] = ("harmony-ext", "harmony-ext")):
    """A parser as vLLM's renderer builds one to adjust a request (OnlineRenderer)."""
    plugin.register()
    cls = ParserManager.get_parser(
        tool_parser_name=names[0], reasoning_parser_name=names[1], enable_auto_tools=True,
        model_name="tiny", is_harmony=True, tokenizer=tokenizer)
    return cls(tokenizer, None, model_config=None)


def chat(**kwargs) -> ChatCompletionRequest:
    return ChatCompletionRequest(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                 **kwargs)


@pytest.mark.parametrize("own, want", [
    (None, [RETURN, CALL]), ([], [RETURN, CALL]), ([7, 9], [7, 9, RETURN, CALL]),
    ([CALL, 7], [CALL, 7, RETURN]),
])
def test_every_chat_request_stops_at_return_and_call(tokenizer, own, want):
    request = chat(**({} if own is None else {"stop_token_ids": own}))
    adjusted = parser(tokenizer).adjust_request(request)
    assert adjusted.stop_token_ids == want
    params = adjusted.to_sampling_params(max_tokens=8, default_sampling_params={})
    assert set(want) <= set(params.stop_token_ids)


def test_a_request_with_ignore_eos_is_left_alone(tokenizer):
    adjusted = parser(tokenizer).adjust_request(chat(ignore_eos=True, stop_token_ids=[7]))
    assert adjusted.stop_token_ids == [7]


def test_a_responses_request_stops_there_too(tokenizer):
    request = ResponsesRequest(model="tiny", input="hi")
    assert parser(tokenizer).adjust_request(request).stop_token_ids == [RETURN, CALL]


def test_vllm_s_own_parser_adds_none(tokenizer):
    """vLLM's built-in gpt-oss parser leaves the ids to the generation config: this test can
    tell the two apart."""
    adjusted = parser(tokenizer, ("openai", "openai_gptoss")).adjust_request(chat())
    assert not adjusted.stop_token_ids
