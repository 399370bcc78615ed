"""Fixtures shared by the core's tests."""

from __future__ import annotations

from typing import Any

import pytest

from harmony_ext_testing.hf_tokenizer import build_hf_tokenizer


@pytest.fixture(scope="session")
def hf_tokenizer() -> Any:
    """A real o200k_harmony Hugging Face tokenizer (``tokenizers.Tokenizer``), built offline
    in memory once (no file: the core's tests need no writable folder)."""
    return build_hf_tokenizer()
