"""Benchmarks: harmony-ext's parsers against the ones they replace, figures side by side.

Not part of the package (the wheel does not ship this folder). Run from the checkout root;
``bash benchmarks/run.sh core|vllm|sglang`` regenerates one result page each.
"""
