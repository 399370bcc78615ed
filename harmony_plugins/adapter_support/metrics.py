"""The counters of contract section 9, on the engine's own Prometheus ``/metrics``.

Both engines serve ``/metrics`` with ``prometheus_client``: from its default registry when
one process serves (vLLM with one API server), or, in multiprocess mode
(``PROMETHEUS_MULTIPROC_DIR`` set: vLLM with ``--api-server-count`` > 1, SGLang always), by
adding up the files every process writes. A counter takes its storage from that mode when it
is created, so the counters are created on the first response a process finishes (by then the
engine has set the mode up), never at import or plugin registration.

A :class:`~harmony_plugins._turn.Turn` hands its :class:`~harmony_plugins._turn.Summary` to
a :class:`Counting` observer, which also writes the contract's one log line per response that
needed a recovery (and a warning for suspected leaks): the core logs nothing, so the line is
written here, in the adapter's logger. ``unchecked`` calls (a schema was declared but could not
be applied) are counted as ``surfaced`` (``rules.outcome_label``: the contract's label set is
closed); a warning says so once per process. SGLang's adapter also counts, apart, the broken
links between its two detectors (:func:`count_link_error`): an error of the glue, not of the
model's output.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from harmony_plugins import Summary, rules

RESPONSES = "harmony_ext_responses"
RECOVERIES = "harmony_ext_recoveries"
TOOL_CALLS = "harmony_ext_tool_calls"
LEAKS = "harmony_ext_leaks_suspected"
LINK_ERRORS = "harmony_ext_link_errors"
"""Metric names without prometheus_client's ``_total`` suffix (it adds it to counters)."""

_lock = threading.Lock()
_counters: tuple[Any, Any, Any, Any] | None = None
_problem: str | None = None
_link_errors: Any = None


def counters(log: logging.Logger) -> tuple[Any, Any, Any, Any] | None:
    """(responses, recoveries, tool_calls, leaks) of this process, created on first use;
    None where prometheus_client is missing (said once, in ``log``)."""
    global _counters, _problem
    if _counters is not None or _problem is not None:
        return _counters
    with _lock:
        if _counters is not None or _problem is not None:
            return _counters
        try:
            from prometheus_client import Counter
            from prometheus_client import values as pc_values
        except ImportError as e:
            _problem = f"prometheus_client is not importable ({e})"
            log.warning("harmony-ext: no counters on /metrics: %s", _problem)
            return None
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR") and not getattr(
                pc_values.ValueClass, "_multiprocess", False):
            log.warning("harmony-ext: PROMETHEUS_MULTIPROC_DIR is set but prometheus_client "
                        "was loaded before it was; this process's counts are not added up")
        _counters = (
            Counter(RESPONSES, "Responses parsed by harmony-ext"),
            Counter(RECOVERIES, "Contract recovery rules applied to model output", ["rule"]),
            Counter(TOOL_CALLS, "Tool calls written by the model, by outcome", ["outcome"]),
            Counter(LEAKS, "Visible text flagged as holding Harmony markup"),
        )
        return _counters


def count_link_error(kind: str, log: logging.Logger) -> None:
    """Count one broken link between SGLang's two detectors (``kind``: ``missing`` or
    ``changed``, :mod:`sglang_ext.link`). Its counter is created on the first error, as the
    others on the first response, so that a server without any shows none. Never raises."""
    global _link_errors
    try:
        if _link_errors is None:
            if counters(log) is None:  # no prometheus_client: said once already
                return
            with _lock:
                if _link_errors is None:
                    from prometheus_client import Counter

                    _link_errors = Counter(
                        LINK_ERRORS, "Broken links between SGLang's two harmony-ext detectors",
                        ["kind"])
        _link_errors.labels(kind=kind).inc()
    except Exception:
        log.exception("harmony-ext: counting a broken detector link failed")


class Counting:
    """The observer adapters give their turns: logs what a finished response has to say in the
    engine's own log (``log``: the adapter's logger, which the engine's logging configuration
    shows; a logger outside it would be lost), and counts it on ``/metrics`` unless ``count`` is
    False (SGLang serves ``/metrics`` only with ``--enable-metrics``). It never raises: counting
    must never fail a response."""

    __slots__ = ("log", "count", "warned_unchecked")

    def __init__(self, log: logging.Logger, count: bool = True) -> None:
        self.log = log
        self.count = count
        self.warned_unchecked = False

    def __call__(self, summary: Summary) -> None:
        try:
            self._log(summary)
            if self.count:
                self._count(summary)
        except Exception:
            self.log.exception("harmony-ext: reporting the response's counts failed")

    def _log(self, summary: Summary) -> None:
        if summary.recoveries:
            self.log.info("harmony-ext recovered malformed model output: %s",
                          ", ".join(f"{k}={v}" for k, v in sorted(summary.recoveries.items())))
        if summary.leaks:
            self.log.warning("harmony-ext: %d suspected markup leak(s) in visible text, first: "
                             "%r", len(summary.leaks), summary.leaks[0][:80])

    def _count(self, summary: Summary) -> None:
        found = counters(self.log)
        if found is None:
            return
        responses, recoveries, tool_calls, leaks = found
        responses.inc()
        for rule, n in summary.recoveries.items():
            recoveries.labels(rule=rule).inc(n)
        for outcome, n in summary.outcomes.items():
            label = rules.outcome_label(outcome)
            if label != outcome and not self.warned_unchecked:
                self.warned_unchecked = True
                self.log.warning(
                    "harmony-ext: a tool declares parameters that could not be checked "
                    "(jsonschema missing, the schema invalid or the value too deep); such "
                    "calls are counted as outcome=\"%s\"", label)
            tool_calls.labels(outcome=label).inc(n)
        if summary.leaks:
            leaks.inc(len(summary.leaks))
