"""The data shipped in the wheel, and the one function that reads it.

The core opens no file; this package is where the shipped vocabulary is read from, so that
:mod:`harmony_plugins.vocab.o200k` only checks and parses bytes (and its tests need no file).
"""

from __future__ import annotations

from importlib import resources

O200K_BASE_XZ = "o200k_base.tiktoken.xz"


def o200k_base_xz() -> bytes:
    """The shipped ``o200k_base.tiktoken``, xz-compressed, as it lies in the package."""
    try:
        return resources.files(__name__).joinpath(O200K_BASE_XZ).read_bytes()
    except OSError as e:
        raise RuntimeError(f"cannot read the shipped o200k vocabulary {O200K_BASE_XZ} "
                           f"({e.strerror or e}); reinstall harmony-ext (pip install "
                           "--force-reinstall harmony-ext)") from None
