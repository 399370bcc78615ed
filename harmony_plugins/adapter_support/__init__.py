"""What both engine adapters share, and the core's edge to the outside: unvalidated pydantic
builds (:mod:`.trusted`), the counters of contract section 9 and the response's log line
(:mod:`.metrics`), the vocabulary written for openai-harmony offline (:mod:`.vocabulary`),
wrapping an engine function once (:mod:`.hooks`), saying a thing once (:mod:`.once`) and reading
an engine's version (:mod:`.versions`). No core module imports this package; each module
imports its third-party library only when used, so importing it imports none."""
