"""harmony-ext adapter for SGLang: select ``--tool-call-parser harmony-ext --reasoning-parser
harmony-ext``.

:mod:`sglang_ext.plugin` (the ``sglang.srt.plugins`` entry point) registers the two detectors of
:mod:`sglang_ext.detectors`, which share one ``harmony_plugins`` parse per response choice, and the
hooks around them; :mod:`sglang_ext.prompt` keeps control-token spellings in messages as text;
``python -m sglang_ext.launch_server`` is for SGLang without plugin support.
"""
