"""The recover-text-calls switch as an adapter reads it (contract section 10).

``HARMONY_EXT_RECOVER_TEXT_CALLS`` turns a visible message that is wholly a call written as
text into that call, and only where a call's arguments can be checked against the tool's JSON
Schema (``jsonschema``, the ``schema`` extra). Where the switch is on and the check is missing,
nothing is recovered, and the engine's log says so once per process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from harmony_plugins import recover_text_calls, schema_check_available
from harmony_plugins._switches import RECOVER_TEXT_CALLS_ENV

from .once import Once


def switched_on(environ: Mapping[str, str], once: Once) -> bool:
    """Whether the switch is on in ``environ``; logs once (through ``once``) when it is on
    but no schema check is installed, so nothing can be recovered."""
    on = recover_text_calls(environ)
    if on and not schema_check_available():
        once("recover-text-calls", logging.WARNING,
             "harmony-ext: %s is on but jsonschema is not installed, so no call written as "
             "text is recovered (pip install 'harmony-ext[schema]')", RECOVER_TEXT_CALLS_ENV)
    return on
