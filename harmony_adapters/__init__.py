"""What both engine adapters share and the core must not hold: unvalidated pydantic builds
(:mod:`harmony_adapters.trusted`) and the Prometheus counters of contract section 9
(:mod:`harmony_adapters.metrics`). Each imports its third-party library only when used."""
