"""What both engine adapters share and the core must not hold: unvalidated pydantic builds
(:mod:`.trusted`) and the Prometheus counters of contract section 9 (:mod:`.metrics`). Each
imports its third-party library only when used, so importing this package imports neither."""
