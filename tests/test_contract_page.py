"""docs/contract.md, the parsing contract, against the code and the pages that cite it.

1. Each recovery rule of :mod:`harmony_plugins.rules` cites its section in brackets at the start
   of its docstring (``[3]``); the contract has that section (a ``## 3.`` heading), and the
   section names the rule (in backticks), so the citation points at the rule and not only at a
   heading. The sections docs/rules.md's table gives a rule include the one rules.py cites.
2. Section 9 names counters the adapters create (``tests/exported_metrics.py`` reads them from
   ``adapter_support/metrics.py``), with the labels it gives them, and lists exactly the
   ``outcome`` labels the adapters count (``rules.outcome_label`` of ``rules.OUTCOMES``).
3. Each case of ``tests/contract_cases.py`` starts its description with a section the
   contract has.
4. No file of the checkout points at the team's copy of the contract any more: the product's
   is docs/contract.md.
5. What ``tests/test_conversation_differential.py`` quotes of the contract to justify its
   intended divergences (``section 8: '...'``) is in that section, word for word.

Each check returns what it finds wrong, and the tests at the end feed the checks altered
inputs to show that they fail. Nothing is written; the pages and sources are only read.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from harmony_plugins import rules
from tests.contract_cases import CASES
from tests.exported_metrics import exported, label_values, recovery_rules

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "contract.md"
RULES_PAGE = ROOT / "docs" / "rules.md"
HEADING = re.compile(r"^## (\d+)\. ", re.MULTILINE)
CITED = re.compile(r"^\[(\d+)\]")
TICKED = re.compile(r"`([a-z_]+)`")
COUNTER = re.compile(r"`(harmony_ext_[a-z_]+)(?:\{([a-z_, ]+)\})?`")
TABLE_ROW = re.compile(r"^\| \[`(?P<name>[a-z_]+)`\]\(#[a-z_]+\) \| (?P<sections>[§0-9, ]+) \|",
                       re.MULTILINE)


def sections(page: str) -> dict[int, str]:
    """The page's numbered sections: number -> text up to the next numbered heading."""
    marks = list(HEADING.finditer(page))
    return {int(m.group(1)): page[m.end():marks[i + 1].start() if i + 1 < len(marks) else None]
            for i, m in enumerate(marks)}


def cited_sections(source: str) -> dict[str, int | None]:
    """rules.py's citations: each string constant's value -> the section its docstring cites
    in brackets at its start (None: no docstring, or no citation)."""
    body = ast.parse(source).body
    out: dict[str, int | None] = {}
    for stmt, after in zip(body, [*body[1:], None], strict=True):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id.isupper()
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):
            continue
        doc = (after.value.value if isinstance(after, ast.Expr)
               and isinstance(after.value, ast.Constant) else None)
        found = CITED.match(doc) if isinstance(doc, str) else None
        out[stmt.value.value] = int(found.group(1)) if found else None
    return out


def rule_citation_problems(page: str, source: str) -> list[str]:
    """Check 1: every recovery rule cites a section of the page, which names it."""
    numbered = sections(page)
    cited = cited_sections(source)
    problems = []
    for rule in sorted(recovery_rules()):
        section = cited.get(rule)
        if section is None:
            problems.append(f"{rule}: rules.py cites no section for it")
        elif section not in numbered:
            problems.append(f"{rule}: rules.py cites [{section}], which docs/contract.md lacks")
        elif rule not in TICKED.findall(numbered[section]):
            problems.append(f"{rule}: section {section} of docs/contract.md does not name it")
    return problems


def rules_page_problems(page: str, rules_page: str, source: str) -> list[str]:
    """Check 1, docs/rules.md's side: each rule's sections in its table exist, and include the
    one rules.py cites."""
    numbered = sections(page)
    cited = cited_sections(source)
    problems = []
    rows = {m["name"]: {int(n) for n in re.findall(r"\d+", m["sections"])}
            for m in TABLE_ROW.finditer(rules_page)}
    if not rows:
        problems.append("docs/rules.md has no rule table with sections")
    for name, given in sorted(rows.items()):
        problems += [f"{name}: docs/rules.md cites §{n}, which docs/contract.md lacks"
                     for n in sorted(given - set(numbered))]
        if cited.get(name) not in given:
            problems.append(f"{name}: docs/rules.md gives §{sorted(given)}, rules.py "
                            f"[{cited.get(name)}]")
    return problems


def observability_problems(page: str, counters: dict[str, tuple[str, ...]],
                           outcomes: set[str]) -> list[str]:
    """Check 2: section 9's counters are exported with its labels; its outcomes are the
    adapters' labels."""
    text = sections(page).get(9, "")
    named = {name: tuple(x.strip() for x in labels.split(",")) if labels else ()
             for name, labels in COUNTER.findall(text)}
    problems = []
    if not named:
        problems.append("section 9 names no counter")
    for name, labels in sorted(named.items()):
        if name not in counters:
            problems.append(f"section 9 names {name}, which the adapters do not create")
        elif counters[name] != labels:
            problems.append(f"section 9 gives {name} the labels {labels}, the adapters "
                            f"{counters[name]}")
    listed = set(TICKED.findall(text)) - set(named)
    if listed != outcomes:
        problems.append(f"section 9 lists the outcomes {sorted(listed)}, the adapters count "
                        f"{sorted(outcomes)}")
    return problems


def case_problems(page: str) -> list[str]:
    """Check 3: each contract case names a section the page has."""
    numbered = sections(page)
    problems = []
    for case in CASES:
        number = re.match(r"(\d+) ", case.rule)
        if number is None or int(number.group(1)) not in numbered:
            problems.append(f"{case.id}: {case.rule!r} names no section of docs/contract.md")
    return problems


OLD_NAME = "harmony" + "-contract"  # spelled in two, so that a search for it misses this file
OLD_FOLDER = "shared" + "/docs"
SKIPPED = {".git", ".cache", ".ruff_cache", "build", "dist", "__pycache__"}


def checkout_files() -> list[Path]:
    """The checkout's Python, Markdown and TOML files, its virtual environments aside."""
    out = []
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if any(p in SKIPPED or p.startswith(".venv") or p.endswith(".egg-info") for p in parts):
            continue
        if path.suffix in {".py", ".md", ".toml"} and path.is_file():
            out.append(path)
    return out


def old_citations(files: dict[str, str]) -> list[str]:
    """Check 4: ``path:line`` of each line that still names the team's copy."""
    return [f"{name}:{number}" for name, text in sorted(files.items())
            for number, line in enumerate(text.splitlines(), 1)
            if OLD_NAME in line or OLD_FOLDER in line]


DIFFERENTIAL = ROOT / "tests" / "test_conversation_differential.py"
SECTION_QUOTES = re.compile(r"section (\d+): (.*?)(?=section \d+:|$)", re.DOTALL)
QUOTE = re.compile(r"(?:^|\s)'(.+?)'(?=[;.,]|\s+and\b)", re.DOTALL)


def divergences(source: str) -> dict[str, str]:
    """The differential test's ``DIVERGENCES`` (name -> why), read with ``ast``: importing the
    test module would load openai-harmony's encoding for nothing."""
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "DIVERGENCES" and isinstance(node.value, ast.Dict)):
            return {ast.literal_eval(k): ast.literal_eval(v)
                    for k, v in zip(node.value.keys, node.value.values, strict=True)
                    if k is not None}
    return {}


def quote_problems(page: str, why: dict[str, str]) -> list[str]:
    """Check 5: each quote of a section is in that section (whitespace aside)."""
    numbered = {n: " ".join(text.split()) for n, text in sections(page).items()}
    problems = []
    for name, text in sorted(why.items()):
        for number, chunk in SECTION_QUOTES.findall(text):
            for quote in QUOTE.findall(chunk):
                if " ".join(quote.split()) not in numbered.get(int(number), ""):
                    problems.append(f"{name}: section {number} does not say {quote!r}")
    return problems


# -- the tests ------------------------------------------------------------------------------


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


RULES_SOURCE = inspect.getsource(rules)


def test_the_page_is_version_5_with_ten_sections() -> None:
    assert page().splitlines()[0] == "# The Harmony parsing contract (version 5)"
    assert sorted(sections(page())) == list(range(1, 11))


def test_every_rule_cites_a_section_that_names_it() -> None:
    assert len(cited_sections(RULES_SOURCE)) > 20  # the rules were read
    assert rule_citation_problems(page(), RULES_SOURCE) == []


def test_the_rules_page_cites_the_same_sections() -> None:
    assert rules_page_problems(page(), RULES_PAGE.read_text(encoding="utf-8"),
                               RULES_SOURCE) == []


def test_section_9_names_what_the_adapters_count() -> None:
    assert observability_problems(page(), exported(), label_values()["outcome"]) == []


def test_every_contract_case_names_a_section() -> None:
    assert len(CASES) > 100
    assert case_problems(page()) == []


def test_nothing_cites_the_team_s_copy() -> None:
    files = checkout_files()
    assert any(f.name == "rules.py" for f in files) and any(f.name == "README.md" for f in files)
    assert old_citations({str(f.relative_to(ROOT)): f.read_text(encoding="utf-8",
                                                                errors="replace")
                          for f in files}) == []


def test_what_the_differential_quotes_is_in_the_contract() -> None:
    why = divergences(DIFFERENTIAL.read_text(encoding="utf-8"))
    quotes = [q for text in why.values() for _, chunk in SECTION_QUOTES.findall(text)
              for q in QUOTE.findall(chunk)]
    assert len(quotes) >= 4  # the quotes were found
    assert quote_problems(page(), why) == []


# -- the checks can fail --------------------------------------------------------------------


def test_a_wrong_or_missing_citation_is_reported() -> None:
    moved = RULES_SOURCE.replace('"""[2] An unknown channel name', '"""[4] An unknown channel name')
    assert moved != RULES_SOURCE
    assert rule_citation_problems(page(), moved) == [
        "unknown_channel: section 4 of docs/contract.md does not name it"]
    gone = RULES_SOURCE.replace('"""[6] A token id outside', '"""A token id outside')
    assert rule_citation_problems(page(), gone) == ["unknown_token: rules.py cites no section "
                                                    "for it"]
    far = RULES_SOURCE.replace('"""[1] A token that is never', '"""[12] A token that is never')
    assert rule_citation_problems(page(), far) == [
        "ignored_token: rules.py cites [12], which docs/contract.md lacks"]
    unnamed = page().replace("(`free_text`)", "")
    assert rule_citation_problems(unnamed, RULES_SOURCE) == [
        "free_text: section 2 of docs/contract.md does not name it"]


def test_a_section_missing_from_the_page_is_reported() -> None:
    without_5 = page().replace("## 5. ", "## Five. ")
    assert "unfinished_header: rules.py cites [5], which docs/contract.md lacks" in (
        rule_citation_problems(without_5, RULES_SOURCE))
    assert "unfinished_header: docs/rules.md cites §5, which docs/contract.md lacks" in (
        rules_page_problems(without_5, RULES_PAGE.read_text(encoding="utf-8"), RULES_SOURCE))
    assert any(p.startswith("eos_") for p in case_problems(without_5))


def test_a_rules_page_at_odds_with_rules_py_is_reported() -> None:
    text = RULES_PAGE.read_text(encoding="utf-8")
    row = "| [`free_text`](#free_text) | §2 |"
    changed = text.replace(row, row.replace("§2", "§3"))
    assert changed != text
    assert rules_page_problems(page(), changed, RULES_SOURCE) == [
        "free_text: docs/rules.md gives §[3], rules.py [2]"]


def test_section_9_at_odds_with_the_counters_is_reported() -> None:
    counters = exported()
    outcomes = label_values()["outcome"]
    renamed = page().replace("`harmony_ext_leaks_suspected_total`", "`harmony_ext_leaks_total`")
    assert observability_problems(renamed, counters, outcomes) == [
        "section 9 names harmony_ext_leaks_total, which the adapters do not create"]
    relabelled = {**counters, "harmony_ext_recoveries_total": ("reason",)}
    assert observability_problems(page(), relabelled, outcomes) == [
        "section 9 gives harmony_ext_recoveries_total the labels ('rule',), the adapters "
        "('reason',)"]
    assert observability_problems(page(), counters, outcomes | {"unchecked"}) == [
        "section 9 lists the outcomes ['invalid_json', 'not_object', 'schema_mismatch', "
        "'surfaced', 'undeclared'], the adapters count ['invalid_json', 'not_object', "
        "'schema_mismatch', 'surfaced', 'unchecked', 'undeclared']"]


def test_an_old_citation_is_reported() -> None:
    assert old_citations({"a.py": "x\n# see " + OLD_NAME + ".md\n",
                          "b.md": "[c](../" + OLD_FOLDER + "/x.md)", "c.md": "docs/contract.md"}
                         ) == ["a.py:2", "b.md:1"]


def test_a_quote_the_contract_does_not_hold_is_reported() -> None:
    why = {"x": "contract section 8: 'each call (`to=functions.NAME`, `json`, the arguments "
                "untouched, `<|call|>`)'; section 1: 'a recipient `to=NAME`, which may stand "
                "in the role section or after the channel' and 'arguments verbatim'. More."}
    assert quote_problems(page(), why) == ["x: section 1 does not say 'arguments verbatim'"]
