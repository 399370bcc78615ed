"""Reading an engine's version, for the plugins' checks of what they were tested against."""

from __future__ import annotations


def release(version: str) -> tuple[int, ...]:
    """The leading numeric parts of a version: ``"0.5.22rc1"`` -> ``(0, 5, 22)``,
    ``"0.33.0+cpu"`` -> ``(0, 33, 0)``; ``()`` for a version with none."""
    parts = []
    for part in version.split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if digits != part:
            break
    return tuple(parts)
