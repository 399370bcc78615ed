"""harmony-ext adapter for SGLang (see issue: SGLang plugin)."""
