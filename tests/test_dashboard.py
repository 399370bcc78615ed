"""docs/grafana/harmony-ext.json, the operators' dashboard, against what the adapters export.

1. It is a dashboard Grafana imports as it is: the top-level keys an import needs (a title, a
   uid, ``schemaVersion``, panels, the time range), ``id`` null (Grafana gives one), a
   Prometheus data source variable that every panel and query uses, panels with unique ids and
   a ``gridPos`` inside the 24-column grid that overlaps no other panel, and queries with a
   PromQL ``expr`` and a ``refId`` unique in their panel.
2. Every query names only counters the adapters create, with only the labels those counters
   have (``tests/exported_metrics.py`` reads both from ``adapter_support/metrics.py``); a
   ``rule`` or ``outcome`` it matches is one the adapters count (``harmony_plugins.rules``);
   a legend's ``{{label}}`` is a label the query keeps. The rest of each query is PromQL's own
   words (functions, keywords).
3. Every counter the adapters create has a panel.

Each check returns what it finds wrong; the tests at the end feed it altered dashboards.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from tests.exported_metrics import exported, label_values

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "docs" / "grafana" / "harmony-ext.json"
REQUIRED = {"title": "a string", "uid": "a string", "schemaVersion": "an integer",
            "panels": "a list", "templating": "an object", "time": "an object"}
KINDS = {"a string": str, "an integer": int, "a list": list, "an object": dict}
GRID_COLUMNS = 24

FUNCTIONS = {"sum", "avg", "min", "max", "count", "topk", "bottomk", "rate", "irate",
             "increase", "clamp_min", "clamp_max", "abs", "round", "scalar", "vector",
             "sum_over_time", "avg_over_time", "max_over_time", "min_over_time"}
AGGREGATIONS = {"sum", "avg", "min", "max", "count", "topk", "bottomk"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset"}
"""PromQL's own words a query may use besides metric names."""

RANGE = re.compile(r"\[[^\]]*\]")
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
SELECTOR = re.compile(r"([A-Za-z_:][\w:]*)\s*\{([^}]*)\}")
MATCHER = re.compile(r'\s*(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
WORD = re.compile(r"(?<![\w$.])([A-Za-z_:][\w:]*)")
LEGEND = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def load() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def structure_problems(board: dict[str, Any]) -> list[str]:
    """Check 1."""
    problems = [f"top-level {key!r} missing or not {kind}"
                for key, kind in REQUIRED.items() if not isinstance(board.get(key), KINDS[kind])]
    if board.get("id") is not None:
        problems.append("top-level 'id' must be null: Grafana gives the imported one its own")
    variables = board.get("templating", {}).get("list", [])
    sources = [v["name"] for v in variables
               if v.get("type") == "datasource" and v.get("query") == "prometheus"]
    if len(sources) != 1:
        problems.append(f"one Prometheus data source variable expected, found {sources}")
    wanted = {"type": "prometheus", "uid": f"${{{sources[0]}}}"} if sources else None
    seen_ids: set[Any] = set()
    cells: dict[tuple[int, int], Any] = {}
    for panel in board.get("panels", []):
        pid = panel.get("id")
        if not isinstance(pid, int) or pid in seen_ids:
            problems.append(f"panel {panel.get('title')!r}: id {pid!r} is not a unique integer")
        seen_ids.add(pid)
        grid = panel.get("gridPos", {})
        if not all(isinstance(grid.get(k), int) for k in ("h", "w", "x", "y")):
            problems.append(f"panel {pid}: gridPos {grid} lacks an integer h, w, x or y")
            continue
        if grid["x"] < 0 or grid["w"] < 1 or grid["h"] < 1 or grid["x"] + grid["w"] > GRID_COLUMNS:
            problems.append(f"panel {pid}: gridPos {grid} is outside the {GRID_COLUMNS} columns")
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                if (x, y) in cells:
                    problems.append(f"panel {pid} overlaps panel {cells[(x, y)]}")
                    break
                cells[(x, y)] = pid
            else:
                continue
            break
        if not isinstance(panel.get("type"), str):
            problems.append(f"panel {pid} has no type")
        if panel.get("type") == "row":
            continue
        if not panel.get("title"):
            problems.append(f"panel {pid} has no title")
        if panel.get("datasource") != wanted:
            problems.append(f"panel {pid}: data source {panel.get('datasource')}, not {wanted}")
        targets = panel.get("targets") or []
        if not targets:
            problems.append(f"panel {pid} has no query")
        refs = [t.get("refId") for t in targets]
        if len(set(refs)) != len(refs) or not all(refs):
            problems.append(f"panel {pid}: refIds {refs} are not unique")
        for target in targets:
            if not isinstance(target.get("expr"), str) or not target["expr"].strip():
                problems.append(f"panel {pid}: query {target.get('refId')} has no expr")
            if target.get("datasource", wanted) != wanted:
                problems.append(f"panel {pid}: query {target.get('refId')} uses another "
                                "data source")
    return problems


def query_problems(expr: str, legend: str, counters: dict[str, tuple[str, ...]],
                   values: dict[str, set[str]]) -> list[str]:
    """Check 2, for one query."""
    problems = []
    text = RANGE.sub("", expr)
    grouping: set[str] = set()
    by: set[str] = set()
    for keyword, labels in GROUPING.findall(text):
        named = {x.strip() for x in labels.split(",") if x.strip()}
        grouping |= named
        if keyword == "by":
            by |= named
    text = GROUPING.sub(" ", text)
    selectors = SELECTOR.findall(text)
    text = SELECTOR.sub(r" \1 ", text)
    words = set(WORD.findall(text))
    metrics = {w for w in words if w not in FUNCTIONS | KEYWORDS}
    problems += [f"{expr}: {m} is no counter the adapters create"
                 for m in sorted(metrics - set(counters))]
    labels = {label for m in metrics & set(counters) for label in counters[m]}
    problems += [f"{expr}: no counter of the query has the label {label}"
                 for label in sorted(grouping - labels)]
    for metric, body in selectors:
        matched = MATCHER.findall(body)
        if "".join(f"{a}{b}{c}" for a, b, c in matched) != re.sub(r'[\s,"]', "", body):
            problems.append(f"{expr}: cannot read the matchers {{{body}}}")
        for label, op, value in matched:
            if label not in counters.get(metric, ()):
                problems.append(f"{expr}: {metric} has no label {label}")
            elif label not in values:
                problems.append(f"{expr}: the values of {label} are not known to the check")
            else:
                wanted = value.split("|") if op in ("=~", "!~") else [value]
                problems += [f"{expr}: {label}={v!r} is never counted"
                             for v in wanted if v not in values[label]]
    kept = by if words & AGGREGATIONS else labels
    problems += [f"{expr}: the legend's {{{{{label}}}}} is not kept by the query"
                 for label in LEGEND.findall(legend) if label not in kept]
    return problems


def queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(expr, legendFormat) of every query of every panel."""
    return [(t.get("expr", ""), t.get("legendFormat", "")) for p in board.get("panels", [])
            for t in p.get("targets", [])]


def metric_problems(board: dict[str, Any], counters: dict[str, tuple[str, ...]],
                    values: dict[str, set[str]]) -> list[str]:
    """Checks 2 and 3."""
    problems = [p for expr, legend in queries(board)
                for p in query_problems(expr, legend, counters, values)]
    shown = {w for expr, _ in queries(board) for w in WORD.findall(RANGE.sub("", expr))}
    problems += [f"no panel shows {name}" for name in sorted(set(counters) - shown)]
    return problems


# -- the tests ------------------------------------------------------------------------------


def test_grafana_can_import_it() -> None:
    board = load()
    assert [p for p in board["panels"] if p.get("type") != "row"]  # panels were read
    assert structure_problems(board) == []


def test_its_queries_name_only_what_the_adapters_export() -> None:
    board = load()
    assert len(queries(board)) >= len(exported())  # every query was read
    assert metric_problems(board, exported(), label_values()) == []


# -- the checks can fail --------------------------------------------------------------------


def _first_query(board: dict[str, Any], title: str) -> dict[str, Any]:
    panel = next(p for p in board["panels"] if p.get("title") == title)
    return panel["targets"][0]


def test_a_broken_layout_is_reported() -> None:
    board = load()
    del board["schemaVersion"]
    board["id"] = 7
    panels = [p for p in board["panels"] if p.get("type") != "row"]
    panels[1]["id"] = panels[0]["id"]
    panels[2]["gridPos"] = dict(panels[0]["gridPos"])
    del panels[3]["gridPos"]["w"]
    panels[4]["targets"][0]["refId"] = ""
    panels[5]["datasource"] = {"type": "prometheus", "uid": "prom-1"}
    assert structure_problems(board) == [
        "top-level 'schemaVersion' missing or not an integer",
        "top-level 'id' must be null: Grafana gives the imported one its own",
        f"panel {panels[1]['title']!r}: id {panels[0]['id']} is not a unique integer",
        f"panel {panels[2]['id']} overlaps panel {panels[0]['id']}",
        f"panel {panels[3]['id']}: gridPos {panels[3]['gridPos']} lacks an integer h, w, x or y",
        f"panel {panels[4]['id']}: refIds [''] are not unique",
        f"panel {panels[5]['id']}: data source {{'type': 'prometheus', 'uid': 'prom-1'}}, not "
        "{'type': 'prometheus', 'uid': '${datasource}'}",
    ]
    no_source = copy.deepcopy(load())
    no_source["templating"]["list"] = []
    assert structure_problems(no_source)[0] == (
        "one Prometheus data source variable expected, found []")


def test_a_query_on_something_not_exported_is_reported() -> None:
    board = load()
    counters, values = exported(), label_values()
    recoveries = _first_query(board, "Recoveries per second, by rule")
    recoveries["expr"] = recoveries["expr"].replace("harmony_ext_recoveries_total",
                                                    "harmony_ext_recoveries")
    assert metric_problems(board, counters, values) == [
        f"{recoveries['expr']}: harmony_ext_recoveries is no counter the adapters create",
        f"{recoveries['expr']}: no counter of the query has the label rule",
    ]
    board = load()
    calls = _first_query(board, "Share of tool calls not surfaced clean")
    calls["expr"] = calls["expr"].replace('outcome!="surfaced"', 'outcome!="unchecked"')
    assert metric_problems(board, counters, values) == [
        f"{calls['expr']}: outcome='unchecked' is never counted"]
    board = load()
    calls = _first_query(board, "Share of tool calls not surfaced clean")
    calls["expr"] = calls["expr"].replace('outcome!="surfaced"', 'rule="free_text"')
    assert metric_problems(board, counters, values) == [
        f"{calls['expr']}: harmony_ext_tool_calls_total has no label rule"]
    board = load()
    rules = _first_query(board, "Recoveries per second, by rule")
    rules["legendFormat"] = "{{outcome}}"
    assert metric_problems(board, counters, values) == [
        f"{rules['expr']}: the legend's {{{{outcome}}}} is not kept by the query"]
    board = load()
    more = counters | {"harmony_ext_new_total": ()}
    assert metric_problems(board, more, values) == ["no panel shows harmony_ext_new_total"]


def test_a_counter_that_is_gone_is_reported() -> None:
    counters = {k: v for k, v in exported().items() if k != "harmony_ext_leaks_suspected_total"}
    problems = metric_problems(load(), counters, label_values())
    assert problems and all("harmony_ext_leaks_suspected_total is no counter" in p
                            for p in problems)
