"""harmony-ext adapter for SGLang: select ``--tool-call-parser harmony-ext --reasoning-parser
harmony-ext``.

:mod:`sglang_ext.plugin` (the ``sglang.srt.plugins`` entry point) registers the two detectors of
:mod:`sglang_ext.detectors`, which share one ``harmony_plugins`` parse per response choice, and the
hooks around them; :mod:`sglang_ext.prompt` renders gpt-oss chat prompts as Harmony and
:mod:`sglang_ext.escaping` keeps control-token spellings in messages as text where SGLang's chat
template renders; ``python -m sglang_ext.launch_server`` is for SGLang 0.5.22 with several
tokenizer workers.
"""
