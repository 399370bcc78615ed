"""docs/rules.md, the product's list of recovery rules and call outcomes, against the code.

1. The page's rule headings (``### `name```` under "Recovery rules") are exactly the recovery
   rules of :mod:`harmony_plugins.rules` (its upper-case string constants less the call outcomes),
   and its outcome headings (under "Call outcomes") exactly ``rules.OUTCOMES``, each with the
   ``outcome`` label ``rules.outcome_label`` gives it; the overview tables and the page's own
   links agree.
2. Every example on the page, parsed by the core (a :class:`~harmony_plugins.Turn` with the tools
   its label names, whole and one character or token per delta), applies the rule it illustrates
   (a ``Recovery`` event and a count of that rule) or gives the call that outcome (counted in the
   turn's ``Summary``, which the ``outcome`` counter reads), and gives the result shown under it.
3. Every test the page cites exists: ``tests/FILE.py::NAME`` a function NAME in that file, any
   other name a case of ``tests/contract_cases.CASES``, and a cited contract case (text mode)
   applies the rule or outcome of the section that cites it.
4. Each check reports what it finds wrong (the tests at the end feed it altered pages).

The page is read, never written; nothing here needs a temporary folder or the environment.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from harmony_plugins import ChatResult, Recovery, Request, Turn, rules
from tests.contract_cases import CASES

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "rules.md"
RULES_TITLE = "Recovery rules"
OUTCOMES_TITLE = "Call outcomes"
TOOLS_TITLE = "The examples' tools"
CASE_IDS = {case.id: case for case in CASES}


def recovery_rules() -> set[str]:
    """The recovery-rule names of harmony_plugins.rules: every upper-case string constant that
    is not a call outcome."""
    return {value for name, value in vars(rules).items()
            if name.isupper() and isinstance(value, str)} - set(rules.OUTCOMES)


# -- reading the page ----------------------------------------------------------------------

LABEL = re.compile(r"^\*\*Example\*\* \((?P<options>[^)]*)\):")
RESULT = "**Result:**"
TESTS = "**Tests:**"
COUNTED = re.compile(r'^\*\*Counted as:\*\* `outcome="(?P<label>[a-z_]+)"`$')
ENTRY = re.compile(r"^### `(?P<name>[a-z_]+)`$")
RULE_ROW = re.compile(r"^\| \[`(?P<name>[a-z_]+)`\]\(#(?P<anchor>[a-z_]+)\) \|")
OUTCOME_ROW = re.compile(r"^\| \[`(?P<name>[a-z_]+)`\]\(#(?P<anchor>[a-z_]+)\) \| "
                         r"`(?P<label>[a-z_]+)` \|")


@dataclass
class Example:
    options: str
    fence: str  # the code block's language: text, or json for token ids
    body: str
    result: str | None  # the JSON under **Result:**, None if missing


@dataclass
class Entry:
    name: str
    text: str
    examples: list[Example] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


@dataclass
class Page:
    sections: dict[str, str]
    entries: dict[str, dict[str, Entry]]  # section title -> name -> entry
    tables: dict[str, list[re.Match[str]]]  # section title -> overview rows
    tools: list[dict[str, Any]]
    problems: list[str]  # what could not be read


def fences(lines: list[str], start: int) -> tuple[str, str, int] | None:
    """The code block beginning at ``lines[start]``: (language, body, the line after it)."""
    if start >= len(lines) or not lines[start].startswith("```"):
        return None
    for end in range(start + 1, len(lines)):
        if lines[end].startswith("```"):
            return lines[start][3:].strip(), "\n".join(lines[start + 1 : end]), end + 1
    return None


def next_line(lines: list[str], i: int) -> int:
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def read_entry(name: str, text: str, problems: list[str]) -> Entry:
    entry = Entry(name, text)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = LABEL.match(line)
        if m:
            # The example is the first code block after the label (the label's sentence may
            # go on for a line or two), and its result the JSON block under **Result:**.
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                if LABEL.match(lines[j]) or lines[j].startswith(RESULT):
                    break
                j += 1
            block = fences(lines, j)
            if block is None:
                problems.append(f"{name}: an example label with no code block under it")
                i += 1
                continue
            fence, body, j = block
            result = None
            k = next_line(lines, j)
            if k < len(lines) and lines[k] == RESULT:
                found = fences(lines, next_line(lines, k + 1))
                if found is not None and found[0] == "json":
                    result = found[1]
                    j = found[2]
            entry.examples.append(Example(m["options"], fence, body, result))
            i = j
            continue
        if line.startswith(TESTS):
            paragraph = [line]
            while i + 1 < len(lines) and lines[i + 1].strip():
                i += 1
                paragraph.append(lines[i])
            entry.cited += re.findall(r"`([^`]+)`", " ".join(paragraph)[len(TESTS):])
        m = COUNTED.match(line)
        if m:
            entry.labels.append(m["label"])
        i += 1
    return entry


def read_page(text: str) -> Page:
    problems: list[str] = []
    sections: dict[str, str] = {}
    title = None
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            title = line[3:].strip()
            if title in sections:
                problems.append(f"section {title!r} twice")
            sections[title] = ""
        elif title is not None:
            sections[title] += line
    entries: dict[str, dict[str, Entry]] = {}
    tables: dict[str, list[re.Match[str]]] = {}
    for title, row in ((RULES_TITLE, RULE_ROW), (OUTCOMES_TITLE, OUTCOME_ROW)):
        body = sections.get(title)
        if body is None:
            problems.append(f"no section {title!r}")
            continue
        parts = re.split(r"^(### .*)\n", body, flags=re.M)
        tables[title] = [m for m in map(row.match, parts[0].splitlines()) if m]
        found: dict[str, Entry] = {}
        for heading, part in zip(parts[1::2], parts[2::2], strict=True):
            m = ENTRY.match(heading)
            if m is None:
                problems.append(f"{title}: heading {heading!r} is not ### `name`")
                continue
            if m["name"] in found:
                problems.append(f"{title}: {m['name']} twice")
            found[m["name"]] = read_entry(m["name"], part, problems)
        entries[title] = found
    tools: list[dict[str, Any]] = []
    block = re.search(r"^```json\n(.*?)^```", sections.get(TOOLS_TITLE, ""), flags=re.M | re.S)
    if block is None:
        problems.append(f"no JSON block of tools in section {TOOLS_TITLE!r}")
    else:
        tools = json.loads(block[1])
    return Page(sections, entries, tables, tools, problems)


@cache
def the_page() -> Page:
    return read_page(PAGE.read_text(encoding="utf-8"))


def anchor(title: str) -> str:
    """The anchor a Markdown heading gets (GitHub's rule, for the titles this page uses)."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


# -- check 1: the names ---------------------------------------------------------------------

def name_problems(page: Page) -> list[str]:
    problems = list(page.problems)
    code_rules, code_outcomes = recovery_rules(), set(rules.OUTCOMES)
    on_page = page.entries.get(RULES_TITLE, {})
    outcomes = page.entries.get(OUTCOMES_TITLE, {})
    for name in sorted(code_rules - set(on_page)):
        problems.append(f"rule {name} has no section under {RULES_TITLE!r}")
    for name in sorted(set(on_page) - code_rules):
        problems.append(f"{name} under {RULES_TITLE!r} is no recovery rule of "
                        "harmony_plugins.rules")
    for name in sorted(code_outcomes - set(outcomes)):
        problems.append(f"outcome {name} has no section under {OUTCOMES_TITLE!r}")
    for name in sorted(set(outcomes) - code_outcomes):
        problems.append(f"{name} under {OUTCOMES_TITLE!r} is not in rules.OUTCOMES")
    for name, entry in outcomes.items():
        if name in code_outcomes and entry.labels != [rules.outcome_label(name)]:
            problems.append(f"outcome {name}: counted as {entry.labels}, rules.outcome_label "
                            f"says {rules.outcome_label(name)!r}")
    for title, names in ((RULES_TITLE, code_rules), (OUTCOMES_TITLE, code_outcomes)):
        rows = page.tables.get(title, [])
        listed = [m["name"] for m in rows]
        if sorted(set(listed)) != sorted(listed):
            problems.append(f"the table of {title!r} lists a name twice")
        for name in sorted(names - set(listed)):
            problems.append(f"the table of {title!r} lacks {name}")
        for name in sorted(set(listed) - names):
            problems.append(f"the table of {title!r} lists {name}, which the code lacks")
        for m in rows:
            if m["anchor"] != m["name"]:
                problems.append(f"table row {m['name']} links to #{m['anchor']}")
            if title == OUTCOMES_TITLE and m["name"] in code_outcomes and (
                    m["label"] != rules.outcome_label(m["name"])):
                problems.append(f"table row {m['name']}: counted as {m['label']!r}, "
                                f"rules.outcome_label says {rules.outcome_label(m['name'])!r}")
    anchors = {anchor(t) for t in page.sections}
    anchors |= {name for section in page.entries.values() for name in section}
    text = "".join(page.sections.values())
    for target in sorted(set(re.findall(r"\]\(#([^)]+)\)", text)) - anchors):
        problems.append(f"a link to #{target}, which is no heading of the page")
    return problems


# -- check 2: the examples ------------------------------------------------------------------

@dataclass
class Setup:
    tools: list[Any] | None = None  # None: never given
    finish: str = "stop"
    pass_undeclared: bool = False
    ids: bool = False
    parallel_tool_calls: bool = True
    recover_text_calls: bool = False


def setup_of(options: str, tools: list[dict[str, Any]]) -> tuple[Setup | None, list[str]]:
    """What an example's label asks for: ``no tools`` / ``tools: a, b`` / ``tools never
    given``, and optionally ``finish: length``, ``HARMONY_EXT_PASS_UNDECLARED=1``, ``token ids``,
    ``parallel_tool_calls: false``, ``HARMONY_EXT_RECOVER_TEXT_CALLS=1``."""
    by_name = {t["function"]["name"]: t for t in tools}
    setup, problems, said_tools = Setup(), [], 0
    for option in (o.strip() for o in options.split(";")):
        if option == "no tools":
            setup.tools, said_tools = [], said_tools + 1
        elif option == "tools never given":
            setup.tools, said_tools = None, said_tools + 1
        elif option.startswith("tools: "):
            names = [n.strip() for n in option[len("tools: "):].split(",")]
            unknown = [n for n in names if n not in by_name]
            if unknown:
                problems.append(f"tools {unknown} are not in {TOOLS_TITLE!r}")
            setup.tools = [by_name[n] for n in names if n in by_name]
            said_tools += 1
        elif option in ("finish: length", "finish: stop"):
            setup.finish = option.split(": ")[1]
        elif option == "HARMONY_EXT_PASS_UNDECLARED=1":
            setup.pass_undeclared = True
        elif option == "token ids":
            setup.ids = True
        elif option == "parallel_tool_calls: false":
            setup.parallel_tool_calls = False
        elif option == "HARMONY_EXT_RECOVER_TEXT_CALLS=1":
            setup.recover_text_calls = True
        else:
            problems.append(f"unknown example option {option!r}")
    if said_tools != 1:
        problems.append(f"({options}) must say the tools once: no tools, tools: NAMES, or "
                        "tools never given")
    return (None if problems else setup), problems


def run_example(setup: Setup, data: Any, per_unit: bool) -> tuple[list[Any], Any, dict]:
    """Parse one example as an engine would: (events, Summary, the message shown)."""
    turn = Turn(Request(setup.tools, pass_undeclared=setup.pass_undeclared,
                        tools_known=setup.tools is not None,
                        parallel_tool_calls=setup.parallel_tool_calls,
                        recover_text_calls=setup.recover_text_calls), events=True)
    units = ([[i] for i in data] if setup.ids else list(data)) if per_unit else [data]
    result = ChatResult()
    events: list[Any] = []
    for unit in units:
        step = turn.feed_ids(unit) if setup.ids else turn.feed_text(unit)
        result.add(step)
        events += step.events
    step = turn.close(setup.finish)
    result.add(step)
    events += step.events
    turn.settle()  # a turn whose tools never come is reported now; otherwise nothing
    message = result.message()
    message["tool_calls"] = [
        {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for c in message["tool_calls"]]
    return events, turn.summary, message


def example_problems(kind: str, entry: Entry, tools: list[dict[str, Any]]) -> list[str]:
    """What is wrong with an entry's examples: each must apply the entry's rule (``kind`` is
    RULES_TITLE) or give a call its outcome (OUTCOMES_TITLE), and give the result shown."""
    name = entry.name
    if not entry.examples:
        return [f"{name}: no example"]
    problems = []
    for n, example in enumerate(entry.examples, 1):
        where = f"{name}, example {n}"
        setup, found = setup_of(example.options, tools)
        problems += [f"{where}: {p}" for p in found]
        if setup is None:
            continue
        if example.fence != ("json" if setup.ids else "text"):
            problems.append(f"{where}: a ```{example.fence} block; text examples are ```text, "
                            "token ids ```json")
            continue
        data = json.loads(example.body) if setup.ids else example.body
        events, summary, message = run_example(setup, data, per_unit=False)
        streamed = run_example(setup, data, per_unit=True)
        if (streamed[1], streamed[2]) != (summary, message):
            problems.append(f"{where}: streamed one unit per delta it parses otherwise")
        if kind == RULES_TITLE:
            applied = {e.rule for e in events if isinstance(e, Recovery)}
            if name not in applied or name not in summary.recoveries:
                problems.append(f"{where}: the rule {name} is not applied (applied: "
                                f"{sorted(summary.recoveries)})")
        elif name not in summary.outcomes:
            problems.append(f"{where}: no call has the outcome {name} (outcomes: "
                            f"{summary.outcomes})")
        if example.result is None:
            problems.append(f"{where}: no {RESULT} JSON block")
        elif json.loads(example.result) != message:
            problems.append(f"{where}: the result shown is not what the core gives: "
                            f"{json.dumps(message)}")
    return problems


# -- check 3: the citations -----------------------------------------------------------------

@cache
def functions_of(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(node.name for node in ast.walk(tree)
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))


def case_applies(case_id: str, kind: str, name: str) -> bool:
    """Whether a contract case, parsed as text, applies rule ``name`` or gives outcome ``name``."""
    from harmony_plugins import StreamParser

    case = CASE_IDS[case_id]
    parser = StreamParser(case.tools)
    parser.feed_text(case.text)
    parser.close(case.finish)
    return name in (parser.recoveries if kind == RULES_TITLE else parser.call_outcomes)


def citation_problems(kind: str, entry: Entry) -> list[str]:
    if not entry.cited:
        return [f"{entry.name}: cites no test"]
    problems = []
    for cited in entry.cited:
        if "::" in cited:
            file, _, function = cited.partition("::")
            path = ROOT / file
            if not file.startswith("tests/") or not path.is_file():
                problems.append(f"{entry.name}: {cited}: no file {file}")
            elif function not in functions_of(path):
                problems.append(f"{entry.name}: {cited}: {file} defines no {function}")
        elif cited not in CASE_IDS:
            problems.append(f"{entry.name}: {cited} is no case of tests/contract_cases.py")
        elif "text" in CASE_IDS[cited].modes and not case_applies(cited, kind, entry.name):
            problems.append(f"{entry.name}: the contract case {cited} does not apply it")
    return problems


# -- the tests ------------------------------------------------------------------------------

def entry_of(name: str) -> tuple[str, Entry]:
    kind = OUTCOMES_TITLE if name in rules.OUTCOMES else RULES_TITLE
    entry = the_page().entries.get(kind, {}).get(name)
    if entry is None:
        pytest.fail(f"docs/rules.md has no section for {name} under {kind!r}")
    return kind, entry


EVERY_NAME = sorted(recovery_rules()) + list(rules.OUTCOMES)


def test_the_page_names_every_rule_and_outcome_of_the_code():
    assert len(recovery_rules()) >= 26  # the constants are found at all
    assert name_problems(the_page()) == []


@pytest.mark.parametrize("name", EVERY_NAME)
def test_every_example_applies_its_rule(name):
    kind, entry = entry_of(name)
    assert example_problems(kind, entry, the_page().tools) == []


def test_every_cited_test_exists():
    page = the_page()
    problems = [p for kind, section in page.entries.items() for entry in section.values()
                for p in citation_problems(kind, entry)]
    assert problems == []


# -- each check can fail --------------------------------------------------------------------

def page_text() -> str:
    return PAGE.read_text(encoding="utf-8")


def section_text(text: str, name: str) -> str:
    """The whole ``### `name``` section of a page text, heading included."""
    m = re.search(rf"^### `{name}`\n.*?(?=^##)", text, flags=re.M | re.S)
    assert m is not None, name
    return m[0]


def test_a_rule_missing_or_extra_is_reported():
    text = page_text()
    missing = text.replace(section_text(text, "free_text"), "")
    assert "rule free_text has no section under 'Recovery rules'" in name_problems(
        read_page(missing))
    extra = text.replace("### `free_text`", "### `made_up_rule`\n\nNothing.\n\n### `free_text`")
    found = name_problems(read_page(extra))
    assert "made_up_rule under 'Recovery rules' is no recovery rule of harmony_plugins.rules" \
        in found
    no_row = re.sub(r"^\| \[`free_text`\].*\n", "", text, flags=re.M)
    assert "the table of 'Recovery rules' lacks free_text" in name_problems(read_page(no_row))
    outcome_gone = text.replace(section_text(text, "not_object"), "")
    assert "outcome not_object has no section under 'Call outcomes'" in name_problems(
        read_page(outcome_gone))
    bad_heading = text.replace("### `free_text`", "### Free text")
    assert any("is not ### `name`" in p for p in name_problems(read_page(bad_heading)))
    bad_link = text.replace("(#free_text)", "(#free-text)", 1)
    assert any("#free-text" in p for p in name_problems(read_page(bad_link)))


def test_a_wrong_outcome_label_is_reported():
    text = page_text()
    unchecked = section_text(text, "unchecked")
    wrong = text.replace(unchecked, unchecked.replace('outcome="surfaced"', 'outcome="unchecked"'))
    assert any(p.startswith("outcome unchecked: counted as ['unchecked']")
               for p in name_problems(read_page(wrong)))
    wrong_row = text.replace("| [`unchecked`](#unchecked) | `surfaced` |",
                             "| [`unchecked`](#unchecked) | `unchecked` |")
    assert any(p.startswith("table row unchecked") for p in name_problems(read_page(wrong_row)))


def test_an_example_that_does_not_apply_its_rule_is_reported():
    page = read_page(page_text())
    tools = page.tools
    junk = page.entries[RULES_TITLE]["header_junk"]
    no_markup = page.entries[RULES_TITLE]["no_markup"].examples[0]
    wrong = Entry("header_junk", "", [no_markup])
    assert any("the rule header_junk is not applied" in p
               for p in example_problems(RULES_TITLE, wrong, tools))
    shown = junk.examples[0]
    bad_result = Example(shown.options, shown.fence, shown.body,
                         shown.result.replace('"Hi."', '"Hi"'))
    assert any("the result shown is not what the core gives" in p
               for p in example_problems(RULES_TITLE, Entry("header_junk", "", [bad_result]),
                                         tools))
    outcome = page.entries[OUTCOMES_TITLE]["surfaced"].examples[0]
    assert any("no call has the outcome not_object" in p
               for p in example_problems(OUTCOMES_TITLE, Entry("not_object", "", [outcome]),
                                         tools))
    # An example needing a tool is checked with that tool, and only with what the label says.
    no_tools = Example("no tools", outcome.fence, outcome.body, outcome.result)
    assert any("the result shown is not what the core gives" in p
               for p in example_problems(OUTCOMES_TITLE, Entry("surfaced", "", [no_tools]),
                                         tools))
    for options, said in [("tools: nope", "not in"), ("no tools; finish: soon", "unknown"),
                          ("finish: length", "must say the tools once")]:
        odd = Example(options, "text", "Hi", None)
        assert any(said in p for p in example_problems(RULES_TITLE,
                                                       Entry("no_markup", "", [odd]), tools))
    assert example_problems(RULES_TITLE, Entry("no_markup", ""), tools) == [
        "no_markup: no example"]


def test_a_citation_of_nothing_is_reported():
    cited = ["tests/test_machine.py::test_no_such_test", "tests/no_such_file.py::test_x",
             "no_such_case", "route_no_markup", "tests/test_machine.py::test_transition",
             "hdr_repeated_start_assistant_twice"]
    problems = citation_problems(RULES_TITLE, Entry("header_restarted", "", cited=cited))
    assert problems == [
        "header_restarted: tests/test_machine.py::test_no_such_test: tests/test_machine.py "
        "defines no test_no_such_test",
        "header_restarted: tests/no_such_file.py::test_x: no file tests/no_such_file.py",
        "header_restarted: no_such_case is no case of tests/contract_cases.py",
        "header_restarted: the contract case route_no_markup does not apply it",
    ]
    assert citation_problems(RULES_TITLE, Entry("header_restarted", "")) == [
        "header_restarted: cites no test"]
