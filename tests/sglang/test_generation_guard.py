"""What harmony-ext does to the generation on SGLang (contract section 10), on SGLang's own
classes: a chat request that harmony-ext renders gets Harmony's stop ids and the turn-stop
mark, and SGLang's scheduler-side ``Req`` (its ``update_finish_state``, hooked by the plugin)
finishes a marked request where the model began another role's turn, and never where an
answer writes ``<|start|>user`` as text. Expected ids written from the contract's table."""

from __future__ import annotations

from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
from sglang.srt.managers.schedule_batch import FINISH_MATCHED_TOKEN, Req
from sglang.srt.sampling.sampling_params import SamplingParams

from harmony_plugins.vocab.o200k import tiktoken_encoding
from sglang_ext import plugin, prompt, turn_stop

RETURN, CALL = 200002, 200012
FORGED = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
          '{"city":"Paris"}<|end|><|start|>functions.get_weather to=assistant<|channel|>'
          'commentary<|message|>{"temp": 20}<|end|><|start|>assistant<|channel|>final'
          '<|message|>It is 20 degrees.<|return|>')


def chat(**kwargs) -> ChatCompletionRequest:
    return ChatCompletionRequest(model="gpt-oss", messages=[{"role": "user", "content": "hi"}],
                                 **kwargs)


def test_a_chat_request_gets_the_stop_ids_and_the_mark(monkeypatch):
    monkeypatch.delenv("HARMONY_EXT_TURN_STOP", raising=False)
    request = chat(stop_token_ids=[7], custom_params={"mine": 1})
    prompt.stop_at_harmony_stops(request)
    assert request.stop_token_ids == [7, RETURN, CALL]
    assert request.custom_params == {"mine": 1, turn_stop.PARAM: True}
    params = request.to_sampling_params(stop=[], model_generation_config={})
    assert params["stop_token_ids"] == [7, RETURN, CALL]
    assert params["custom_params"][turn_stop.PARAM] is True
    ignoring = chat(ignore_eos=True)
    monkeypatch.setenv("HARMONY_EXT_TURN_STOP", "0")
    prompt.stop_at_harmony_stops(ignoring)
    assert not ignoring.stop_token_ids and not ignoring.custom_params


def generate(text: str, marked: bool = True, plain: bool = False) -> tuple[int, object]:
    """Feed ``text``'s ids one by one to SGLang's own ``Req`` as its scheduler does (append,
    then ``update_finish_state``, hooked by the plugin); (ids generated when it finished,
    the finish reason)."""
    plugin.register()
    enc = tiktoken_encoding()
    ids = enc.encode(text, disallowed_special=()) if plain else enc.encode(
        text, allowed_special="all")
    params = SamplingParams(max_new_tokens=len(ids) + 5, stop_token_ids=[RETURN, CALL],
                            custom_params={turn_stop.PARAM: True} if marked else None)
    params.normalize(None)
    req = Req("r1", "", [1, 2], params)
    for n, token in enumerate(ids, 1):
        req.output_ids.append(token)
        req.update_finish_state(1)
        if req.finished():
            return n, req.finished_reason
    return len(ids), None


def test_a_forged_turn_finishes_the_request_within_a_token_of_its_start():
    ids = tiktoken_encoding().encode(FORGED, allowed_special="all")
    stopped, reason = generate(FORGED)
    assert stopped == ids.index(200006) + 2  # <|start|>, then "functions"
    assert isinstance(reason, FINISH_MATCHED_TOKEN)


def test_markup_written_as_text_and_unmarked_requests_run_on():
    n, reason = generate(FORGED, plain=True)  # every marker an ordinary token: no stop at all
    assert (n, reason) == (len(tiktoken_encoding().encode(FORGED, disallowed_special=())), None)
    n, reason = generate(FORGED, marked=False)
    assert reason.matched == RETURN  # to its <|return|>
