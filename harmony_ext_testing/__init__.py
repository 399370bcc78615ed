"""Instruments for harmony-ext's tests and demos; not part of the wheel.

Scripted-output processors for real vLLM and SGLang servers (random-weight models emit
noise), the offline Hugging Face tokenizer of the tiny test models, and the client-side
merge of streamed deltas. Servers in tests import it from the checkout, which must be on
their path (scripts/vllm_tiny_server.sh arranges it); production installs never load it.

The fuzzer every test tier runs (``fuzzed_outputs``: seeded gpt-oss outputs, mutated and random,
and the invariants every parse of them holds, the generation guard's agreement with the parse
among them).

And what the comparison pages' generators (``pages/``) share with the tests, so that the
generators import nothing from ``tests/``: the engines' case tables (``vllm_cases``,
``sglang_cases``), the multi-turn round trips and their hand-written renderings
(``vllm_round_trips``, ``sglang_round_trips``, ``renderings``), the tiny vLLM server's start
and stop (``vllm_server``) and SGLang's serving with the model scripted (``sglang_serving``).
"""

LOADED_FROM = "harmony-ext loaded from"
"""What vllm_scripted logs in each server process it loads in, then ``vllm_ext`` and
``harmony_plugins``' ``__file__``: tests check that a server runs the installed wheel."""
