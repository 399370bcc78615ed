"""Fixtures shared by the core's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer


@pytest.fixture(scope="session")
def hf_dir(tmp_path_factory) -> Path:
    """A real o200k_harmony Hugging Face tokenizer folder, generated offline once."""
    return write_hf_tokenizer(tmp_path_factory.mktemp("o200k_hf"))
