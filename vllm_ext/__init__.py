"""harmony-ext adapter for vLLM (see issue: vLLM request path)."""
