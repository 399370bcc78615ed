"""The o200k vocabulary on disk, for openai-harmony on a host that cannot download it.

openai-harmony 0.0.8 (SGLang's) downloads ``o200k_base.tiktoken`` at run time, or reads it from
the folder ``TIKTOKEN_ENCODINGS_BASE`` names; on an air-gapped host only the second works. The
core writes no file and sets no variable (:mod:`harmony_plugins.prompt._render` only says why the
encoding did not load), so the callers that need the encoding (the ``harmony-ext render``
command, and SGLang's prompt hook through the engine glue) do it here: write harmony-ext's copy,
checked against its published sha256, to a per-user cache folder (written once, reused by every
later process) and point the variable at it. Where that folder cannot be written, a temporary
folder is used and removed when the process exits.

Why here: it is I/O on the shipped vocabulary that the command line and the engine glue both
need, so it is an edge of its own beside them (the core's modules do no I/O, and none imports
the engine glue).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from harmony_plugins.prompt import _render as render
from harmony_plugins.vocab import o200k


def write_tiktoken_file(path: str | os.PathLike[str]) -> Path:
    """Write ``o200k_base.tiktoken`` to ``path`` (a file name) and return it. The file is
    replaced atomically, so tiktoken and openai-harmony never see a partial one (they would try
    to download it again)."""
    data = o200k.tiktoken_file_bytes()  # checked against its sha256 when read
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target


def cache_folder() -> Path:
    """Where the vocabulary is kept between processes: ``$XDG_CACHE_HOME`` (or ``~/.cache``)
    ``/harmony-ext/o200k-<sha256 prefix>``, so a changed vocabulary gets a folder of its own."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "harmony-ext" / f"o200k-{o200k.O200K_BASE_SHA256[:16]}"


def _is_official(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return hashlib.sha256(data).hexdigest() == o200k.O200K_BASE_SHA256


def _vocabulary_folder() -> Path:
    """The cache folder holding the official file (written when missing or wrong); where it
    cannot be written, a temporary folder that this process removes at exit (one folder per
    process start would otherwise pile up, 3.6 MB each)."""
    try:
        folder = cache_folder()  # RuntimeError: no home directory
        target = folder / o200k.FILE_NAME
        if not _is_official(target):
            write_tiktoken_file(target)
        return folder
    except (OSError, RuntimeError):
        pass
    folder = Path(tempfile.mkdtemp(prefix="harmony-ext-vocab-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    write_tiktoken_file(folder / o200k.FILE_NAME)
    return folder


def load_openai_harmony(log: logging.Logger | None = None) -> str | None:
    """Make openai-harmony's gpt-oss encoding load
    (:func:`harmony_plugins.prompt._render.encoding`), offline if need be; returns None, or
    why it cannot load.

    When it does not load and ``TIKTOKEN_ENCODINGS_BASE`` is unset, the vocabulary is put in
    the cache folder (:func:`cache_folder`, or a temporary one), the variable set for this
    process and its children, and the load tried again (one line in ``log`` says so). A
    variable the user set is left alone.
    """
    encoding, problem = render.loaded_encoding()
    if encoding is not None or problem == render.NOT_INSTALLED:
        return problem
    if os.environ.get(render.VOCAB_ENV):
        return problem
    try:
        folder = _vocabulary_folder()
    except (OSError, RuntimeError) as e:
        return f"{problem}; offline vocabulary: {e}"
    os.environ[render.VOCAB_ENV] = str(folder)
    render.loaded_encoding.cache_clear()
    encoding, second = render.loaded_encoding()
    if encoding is None:
        return f"{problem}; offline vocabulary: {second}"
    if log is not None:
        log.info("harmony-ext: openai_harmony could not load its vocabulary (%s); using "
                 "harmony-ext's offline copy (%s=%s)", problem, render.VOCAB_ENV, folder)
    return None
