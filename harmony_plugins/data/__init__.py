"""The data shipped in the wheel, and the functions that read it.

The core opens no file; this package is where the shipped vocabulary (and the class of each of
its ids' first character, :mod:`harmony_plugins.vocab.starts`) is read from, so that
:mod:`harmony_plugins.vocab` only checks and parses bytes (and its tests need no file).
"""

from __future__ import annotations

from importlib import resources

O200K_BASE_XZ = "o200k_base.tiktoken.xz"
O200K_STARTS_XZ = "o200k_starts.xz"


def o200k_base_xz() -> bytes:
    """The shipped ``o200k_base.tiktoken``, xz-compressed, as it lies in the package."""
    return _read(O200K_BASE_XZ, "the shipped o200k vocabulary")


def o200k_starts_xz() -> bytes:
    """The shipped class of each o200k_harmony id's first character, xz-compressed."""
    return _read(O200K_STARTS_XZ, "the shipped o200k token classes")


def _read(name: str, what: str) -> bytes:
    try:
        return resources.files(__name__).joinpath(name).read_bytes()
    except OSError as e:
        raise RuntimeError(f"cannot read {what} {name} ({e.strerror or e}); reinstall "
                           "harmony-ext (pip install --force-reinstall harmony-ext)") from None
