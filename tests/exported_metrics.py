"""What harmony-ext exports on ``/metrics``, read from the code that exports it.

:func:`exported` reads :mod:`harmony_plugins.adapter_support.metrics` the way a reviewer does:
every ``Counter(NAME, help, [labels])`` it creates, with ``NAME`` and the labels resolved
against the module's own constants (prometheus_client adds ``_total`` to a counter's name).
The module is read with ``ast``, not run: creating the counters would register them in this
process's prometheus_client registry (and needs prometheus_client, which the core's venv does
not have). :func:`label_values` gives the values the adapters count under the labels whose
values the core names: ``rule`` (the recovery rules of :mod:`harmony_plugins.rules`) and
``outcome`` (``rules.outcome_label`` of each call outcome).

Used by the tests that hold pages to the counters (``test_dashboard.py``,
``test_contract_page.py``).
"""

from __future__ import annotations

import ast
import inspect
from types import ModuleType
from typing import Any

from harmony_plugins import rules
from harmony_plugins.adapter_support import metrics

SUFFIX = "_total"
"""What prometheus_client adds to a counter's name on ``/metrics``."""


def _value(node: ast.expr, module: ModuleType) -> Any:
    """A literal, or a module-level name of ``module``, as its value."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return getattr(module, node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return getattr(getattr(module, node.value.id), node.attr)
    raise ValueError(f"cannot read {ast.unparse(node)} without running the code")


def counters_created(module: ModuleType = metrics) -> dict[str, tuple[str, ...]]:
    """``{name on /metrics: label names}`` of every ``Counter(...)`` call in ``module``."""
    found: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called != "Counter":
            continue
        name = _value(node.args[0], module) if node.args else _value(
            next(k.value for k in node.keywords if k.arg == "name"), module)
        labels_node = node.args[2] if len(node.args) > 2 else next(
            (k.value for k in node.keywords if k.arg == "labelnames"), None)
        labels: tuple[str, ...] = ()
        if labels_node is not None:
            if not isinstance(labels_node, ast.List | ast.Tuple):
                raise ValueError(f"labels {ast.unparse(labels_node)} are not a literal list")
            labels = tuple(_value(e, module) for e in labels_node.elts)
        found[name + SUFFIX] = labels
    return found


def exported() -> dict[str, tuple[str, ...]]:
    """The counters the adapters export: ``{name with _total: label names}``."""
    return counters_created(metrics)


def recovery_rules() -> set[str]:
    """Every recovery-rule name (the upper-case string constants of harmony_plugins.rules that
    are not call outcomes), as counted under ``rule``."""
    return {value for name, value in vars(rules).items()
            if name.isupper() and isinstance(value, str)} - set(rules.OUTCOMES)


def label_values() -> dict[str, set[str]]:
    """The values the adapters count under ``rule`` and ``outcome``."""
    return {"rule": recovery_rules(),
            "outcome": {rules.outcome_label(o) for o in rules.OUTCOMES}}
