"""The counters of contract section 9, on the engine's own Prometheus ``/metrics``.

Both engines serve ``/metrics`` with ``prometheus_client``: from its default registry when
one process serves (vLLM with one API server), or, in multiprocess mode
(``PROMETHEUS_MULTIPROC_DIR`` set: vLLM with ``--api-server-count`` > 1, SGLang always), by
adding up the files every process writes. A counter takes its storage from that mode when it
is created, so the counters are created on the first response a process finishes (by then the
engine has set the mode up), never at import or plugin registration.

A :class:`~harmony_plugins._turn.Turn` hands its :class:`~harmony_plugins._turn.Summary` to
a :class:`Counting` observer, which also writes the contract's one log line per response that
needed a rule (:func:`report_line`): the core logs nothing, so the line is written here, in the
adapter's logger, naming the request the adapter bound the observer to
(:meth:`Counting.for_request`), so that a complaint about one request can be traced to what the
parse did to it. ``unchecked`` calls (a schema was declared but could not be applied) are
counted as ``surfaced`` (``rules.outcome_label``: the contract's label set is closed); a
warning says so once per process. SGLang's adapter also counts, apart, the broken links
between its two detectors (:func:`count_link_error`): an error of the glue, not of the model's
output.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable
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


UNKNOWN_REQUEST = "-"
"""What the line names when the adapter could not tell the request (an engine's classes used
outside its server)."""
SHOWN = 20
"""The most rules, and calls, one line lists; the rest are counted (``+N_more``)."""
_PLAIN = re.compile(r"[\w.\-]+")


def _word(value: str) -> str:
    """A name or channel as the line shows it: as written when it is a plain word, else quoted
    (a declared name may hold spaces, commas or parentheses; the model may write anything)."""
    return value if _PLAIN.fullmatch(value) else json.dumps(value, ensure_ascii=False)


def _listed(items: list[str]) -> str:
    more = len(items) - SHOWN
    return ",".join(items[:SHOWN]) + (f",+{more}_more" if more > 0 else "")


def report_line(summary: Summary, request_id: str | None) -> str | None:
    """The one log line of a response that needed a rule, or None for one that needed none
    (:attr:`Summary.needed_rules`).

    ``harmony-ext: request=ID rules=RULE(AT)*N,... calls=NAME:OUTCOME,... leaks=N first=EXCERPT``:
    the engine's request id (:data:`UNKNOWN_REQUEST` when not known); each rule applied, in the
    order first applied, with what it touched (``Summary.applied``: a call's name, a forged
    turn's role, a message's channel; nothing shown for text outside any message) and how often
    when more than once; each call the model wrote with its outcome, in order; the suspected
    leaks with the first one's excerpt. Parts with nothing to say are left out.
    """
    if not summary.needed_rules:
        return None
    parts = [f"harmony-ext: request={request_id or UNKNOWN_REQUEST}"]
    if summary.applied:
        parts.append("rules=" + _listed([
            (f"{rule}({_word(at)})" if at else rule) + (f"*{n}" if n > 1 else "")
            for (rule, at), n in summary.applied.items()]))
    if summary.calls:
        parts.append("calls=" + _listed([f"{_word(name)}:{outcome}"
                                         for name, outcome in summary.calls]))
    if summary.leaks:
        parts.append(f"leaks={len(summary.leaks)} first={summary.leaks[0][:80]!r}")
    return " ".join(parts)


class Counting:
    """The observer adapters give their turns: logs what a finished response has to say in the
    engine's own log (``log``: the adapter's logger, which the engine's logging configuration
    shows; a logger outside it would be lost), and counts it on ``/metrics`` unless ``count`` is
    False (SGLang serves ``/metrics`` only with ``--enable-metrics``). It never raises: counting
    must never fail a response.

    Called with a summary alone it names no request; :meth:`for_request` gives a turn an
    observer that names its request."""

    __slots__ = ("log", "count", "warned_unchecked")

    def __init__(self, log: logging.Logger, count: bool = True) -> None:
        self.log = log
        self.count = count
        self.warned_unchecked = False

    def __call__(self, summary: Summary) -> None:
        self.report(summary, None)

    def for_request(self, request_id: str | None) -> Callable[[Summary], None]:
        """This observer for one turn of the request ``request_id`` (the id the engine
        reports to the client and in its own log)."""

        def observe(summary: Summary) -> None:
            self.report(summary, request_id)

        return observe

    def report(self, summary: Summary, request_id: str | None) -> None:
        """Log the response's line (:func:`report_line`; WARNING when it holds a suspected
        leak, else INFO) and count it."""
        try:
            line = report_line(summary, request_id)
            if line is not None:
                self.log.log(logging.WARNING if summary.leaks else logging.INFO, "%s", line)
            if self.count:
                self._count(summary)
        except Exception:
            self.log.exception("harmony-ext: reporting the response's counts failed")

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
