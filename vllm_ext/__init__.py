"""harmony-ext adapter for vLLM: ``--tool-call-parser harmony-ext --reasoning-parser harmony-ext``.

:mod:`vllm_ext.plugin` (the ``vllm.general_plugins`` entry point) registers the names and puts
:class:`vllm_ext.harmony_parser.HarmonyExtParser` on vLLM's request path."""
