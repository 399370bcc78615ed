"""Saying a thing once per process.

A plugin's warnings (a hook that could not be installed, a fallback taken) concern the process,
not a request: said per request, they would flood the engine's log.
"""

from __future__ import annotations

import logging
from typing import Any


class Once:
    """``once(key, level, message, *args)`` logs ``message`` the first time ``key`` is seen,
    in ``log`` (the adapter's logger, which the engine's log shows); True when it logged."""

    __slots__ = ("log", "said")

    def __init__(self, log: logging.Logger) -> None:
        self.log = log
        self.said: set[str] = set()

    def __call__(self, key: str, level: int, message: str, *args: Any) -> bool:
        if key in self.said:
            return False
        self.said.add(key)
        self.log.log(level, message, *args)
        return True

    def forget(self, key: str) -> None:
        """Say ``key`` again next time (tests that check a line is logged)."""
        self.said.discard(key)
