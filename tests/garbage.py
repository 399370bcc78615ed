"""What only the cyclic garbage collector frees: a finished parse should leave nothing there
(a server finishes one per response)."""

from __future__ import annotations

import gc
from collections.abc import Callable


def cyclic_garbage(run: Callable[[], None]) -> int:
    """How many objects ``run`` left that only the cyclic garbage collector frees (it runs once
    before, so that first-use caches, a schema's validator say, are not counted)."""
    run()
    gc.collect()
    gc.disable()
    try:
        run()
        return gc.collect()
    finally:
        gc.enable()
