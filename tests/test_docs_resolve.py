"""Every Python name, repository path and relative link the documents give resolves (issue 45).

A page or docstring that names a module, function or file the code no longer has misleads its
reader, and nothing else notices: this test reads them all and looks each one up.

**Where.** ``README.md``, ``CONTRIBUTING.md``, ``CHANGELOG.md`` and ``docs/*.md`` (the generated
pages too), and the docstrings (every bare string statement, read with ``ast``, nothing imported)
of the product's modules, ``harmony_plugins``, ``vllm_ext`` and ``sglang_ext``.

**What counts as a name** (a dotted Python name, ``a.b.c``, a trailing call ``(...)`` dropped,
``module:attr`` as an entry point writes it):

- in markdown, inside code spans (backticks) and fenced code blocks: a name whose first part is
  one of our packages (``harmony_plugins``, ``vllm_ext``, ``sglang_ext``, ``harmony_ext_testing``;
  and ``tests``, ``pages``, ``benchmarks``); in code spans also a name of two parts or more whose
  first part is the last part of exactly one of our modules (``compat.prompt_message`` is
  ``harmony_plugins.compat.prompt_message``) or a class defined at the top of exactly one of
  them (``Turn.declare`` is ``harmony_plugins._turn.Turn.declare``; an engine's class of the
  same name must be written out, ``openai_harmony.StreamableParser``). In fenced blocks
  ``from PACKAGE import a, b`` (a trailing comment, parentheses allowed) names ``PACKAGE.a``
  and ``PACKAGE.b``, and a dotted name after it that starts with one of them is read from
  there (``a.x`` is ``PACKAGE.a.x``);
- in docstrings, the same inside double-backtick literals, and every target of a ``:mod:``,
  ``:func:``, ``:class:``, ``:meth:``, ``:data:``, ``:attr:`` role, read as Python reads a name
  there: ``.x`` relative to the module's package, else its first part bound in the enclosing
  classes, else in the module (so ``:meth:`Turn.declare``` in a module that imports ``Turn``),
  else a module's last part or a class, as in code spans. A role whose first part is none of
  these must name a module outside the project (the standard library's, or one of
  :data:`THIRD_PARTY`), written out (``:class:`openai_harmony.Message```); else it is reported.

A name resolves when it exists: under ``harmony_plugins`` and ``harmony_ext_testing`` the longest
importable module is imported (this venv) and the rest looked up with ``getattr``; under the
adapters (whose engines this venv lacks), and wherever the import cannot say (an engine import,
an attribute set in ``__init__``), the source is read: the module's file exists and the name is
bound at its top level (class, function, assignment, import, followed to its source when that is
ours) or in the class (its body, ``self.x = ...``, ``__slots__``; a class with a base outside the
project may inherit anything).

**What counts as a path**: a path whose first part is one of :data:`PATH_ROOTS` (with a ``/``:
``tests/data.py``, ``docs/``), or one of :data:`ROOT_FILES`, in code spans, fenced blocks, plain
text and docstrings; ``:LINE`` or ``:FIRST-LAST`` after it must be within the file, ``::NAME``
(a pytest node) must name a test function or class of it; ``*`` is a glob that must match. The
engines' own paths (``vllm/parser/harmony.py``, ``serving.py:1292``) start elsewhere and are not
ours; neither is a bare file name (``harmony.py``), whose folder only its sentence gives.

**Links**: every markdown link or image whose target is not a URL must name an existing file or
folder, relative to the page; an ``#anchor`` on a markdown page must be one of its headings (as
GitHub makes them: lower case, punctuation dropped, spaces as ``-``, repeats numbered).

**Skipped, and counted** (:func:`test_skips_are_few`), where no reading is certain:

- a relative name (a code span's or a role's) whose first part is the last part of more than
  one of our modules, or a class of more than one (``items.problem()``: ``vllm_ext.items`` or
  ``sglang_ext.items``);
- a path with a placeholder part, one of :data:`PLACEHOLDERS` (``tests/FILE.py::NAME``).

Nothing is written; run from another checkout's root, the test reads that checkout.
"""

from __future__ import annotations

import ast
import glob
import importlib
import importlib.util
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("harmony_plugins", "vllm_ext", "sglang_ext")
PACKAGES = (*PRODUCT, "harmony_ext_testing")
"""Our installable (or, for the last, importable from the checkout) packages."""
NAME_ROOTS = (*PACKAGES, "tests", "pages", "benchmarks")
"""First parts that make a dotted name ours."""
IMPORTED = ("harmony_plugins", "harmony_ext_testing")
"""Resolved by importing them; the adapters need their engines, so they are read instead."""
PATH_ROOTS = (*NAME_ROOTS, "scripts", "docs", ".github", ".ci")
ROOT_FILES = ("pyproject.toml", "README.md", "CONTRIBUTING.md", "CHANGELOG.md", "LICENSE",
              "MANIFEST.in")
PLACEHOLDERS = frozenset({"FILE", "NAME", "PATH", "DIR", "MODULE", "PACKAGE"})
THIRD_PARTY = frozenset({
    "vllm", "sglang", "openai_harmony", "openai", "pydantic", "prometheus_client", "tiktoken",
    "transformers", "tokenizers", "jsonschema", "fastapi", "starlette", "uvicorn", "torch",
    "pytest", "hypothesis", "dill", "zmq", "xgrammar", "huggingface_hub"})
"""Projects a role may name, written out (with the standard library's modules)."""
FILE_SUFFIXES = frozenset({"py", "md", "sh", "toml", "json", "yml", "yaml", "txt", "xz", "in",
                           "tiktoken", "jinja", "log", "whl", "cfg", "html", "lock", "gz"})
"""A dotted word ending in one of these is a file name, not a Python name."""
ROLES = ("mod", "func", "class", "meth", "data", "attr")

PATH = re.compile(
    r"(?<![\w./~$@:\\-])"
    rf"(?P<path>(?:{'|'.join(re.escape(r) for r in PATH_ROOTS)})/[\w.*/-]*"
    rf"|(?:{'|'.join(re.escape(r) for r in ROOT_FILES)})(?![\w.-]))"
    r"(?::(?P<first>\d+)(?:-(?P<last>\d+))?|::(?P<node>[\w:]+))?")
NAME = re.compile(r"(?<![\w.\-/:$~@=<>|\\])(?P<name>\.*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"
                  r"(?::(?P<attr>[A-Za-z_]\w*))?(?![\w\-/@])")
FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+\(?([\w\s,]+?)\)?\s*(?:#.*)?$",
                         re.MULTILINE)
SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]"
                  r"\(\s*<?(?P<target>[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(?P<target>\S+)", re.MULTILINE)
URL = re.compile(r"(?<![\w.+-])(?:[a-z][a-z0-9+.-]*://|mailto:)\S*", re.IGNORECASE)
SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:", re.IGNORECASE)
LITERAL = re.compile(r"``(.+?)``", re.DOTALL)
ROLE = re.compile(rf":(?:py:)?(?P<role>{'|'.join(ROLES)}):`(?P<target>[^`]+)`")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


@dataclass
class Report:
    """What the checks found: problems, skips (each with its reason) and how much was read."""

    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)

    def add(self, other: Report) -> None:
        self.problems += other.problems
        self.skipped += other.skipped
        self.checked.update(other.checked)


Locate = Callable[[int], str]
"""An offset into the text being read -> ``file:line``, for the report."""


def _locator(where: str, source: str, base: int = 0, first_line: int = 1) -> Locate:
    """``file:line`` of an offset into ``source[base:]``."""
    return lambda at: f"{where}:{first_line + source.count(chr(10), 0, base + at)}"


def _blank(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` replaced by spaces, newlines kept (offsets stay)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _spans(text: str, pattern: re.Pattern[str] = SPAN, group: int = 2) -> Iterator[
        re.Match[str]]:
    """Code spans (markdown's, or a docstring's double-backtick literals: ``LITERAL``, group
    1), which never cross a blank line."""
    for match in pattern.finditer(text):
        if not re.search(r"\n[ \t]*\n", match.group(group)):
            yield match


def _without_fences(page: str) -> tuple[str, list[tuple[int, str]]]:
    """The page with its fenced code blocks blanked, and each block's (offset, text)."""
    prose, blocks, block, offset, start, fence = [], [], [], 0, 0, ""
    for line in page.splitlines(keepends=True):
        opener, inside = FENCE.match(line), bool(fence)
        if not fence and opener:
            fence, start, block = opener.group(1), offset + len(line), []
        elif fence and line.strip().startswith(fence):
            blocks.append((start, "".join(block)))
            fence = ""
        elif fence:
            block.append(line)
        prose.append(re.sub(r"[^\n]", " ", line) if inside or opener else line)
        offset += len(line)
    return "".join(prose), blocks


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"`|\*\*|__|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: str) -> set[str]:
    """Every anchor a markdown page has: its headings' (repeats numbered) and explicit ones."""
    seen: Counter[str] = Counter()
    out = set(ANCHOR.findall(page))
    for match in HEADING.finditer(_without_fences(page)[0]):
        base = slug(match.group(1))
        out.add(f"{base}-{seen[base]}" if seen[base] else base)
        seen[base] += 1
    return out


def _bindings(body: list[ast.stmt]) -> Iterator[tuple[str, ast.AST]]:
    """Names a block binds, looking into ``if``/``try``/``with``/loops (not functions or
    classes, whose names it binds)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name, node
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for name in (n for t in targets for n in ast.walk(t)):
                if isinstance(name, ast.Name):
                    yield name.id, node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                yield (alias.asname or alias.name).split(".")[0], node
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            inner = [*node.body, *getattr(node, "orelse", ()), *getattr(node, "finalbody", ())]
            for handler in getattr(node, "handlers", ()):
                inner += handler.body
            yield from _bindings(inner)


def _class_bindings(cls: ast.ClassDef) -> set[str]:
    """What a class defines: its body's names, ``self.x = ...`` in its methods, ``__slots__``."""
    names = {name for name, _ in _bindings(cls.body)}
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            names.add(node.attr)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                for t in node.targets):
            names |= {c.value for c in ast.walk(node.value)
                      if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return names


def _docstrings(body: list[ast.stmt], scope: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], str, int]]:
    """(enclosing classes, text, first line) of each bare string statement of a module: the
    module's, classes' and functions' docstrings, and those written under an attribute."""
    for node in body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            yield scope, node.value.value, node.lineno
        elif isinstance(node, ast.ClassDef):
            yield from _docstrings(node.body, (*scope, node.name))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.If | ast.Try
                        | ast.With | ast.For | ast.While):
            yield from _docstrings([*node.body, *getattr(node, "orelse", ())], scope)


class Checker:
    """Resolves names, paths and links against one checkout (``root``), reading each source
    once."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self._trees: dict[Path, ast.Module] = {}
        self._resolved: dict[str, bool] = {}

    # The checkout's modules.

    @cached_property
    def modules(self) -> dict[str, Path]:
        """Dotted module name -> its file (a package's ``__init__.py``; a folder without one,
        which Python imports as a namespace package, is the folder)."""
        out: dict[str, Path] = {}
        for top in NAME_ROOTS:
            if not (self.root / top).is_dir():
                continue
            for path in [self.root / top, *sorted((self.root / top).rglob("*"))]:
                parts = path.relative_to(self.root).with_suffix("").parts
                if any(p.startswith(".") or p == "__pycache__" for p in parts):
                    continue
                if path.is_dir():
                    init = path / "__init__.py"
                    out[".".join(parts)] = init if init.exists() else path
                elif path.suffix == ".py" and path.name != "__init__.py":
                    out[".".join(parts)] = path
        return out

    @cached_property
    def homes(self) -> dict[str, list[str]]:
        """What a relative name may start with -> where that is: the last part of one of our
        packages' modules (that module), a class defined at the top of one (``module.Class``)."""
        out: dict[str, list[str]] = {}
        for module, path in self.modules.items():
            if module.split(".")[0] not in PACKAGES or "." not in module:
                continue
            out.setdefault(module.rsplit(".", 1)[1], []).append(module)
            if not path.is_dir():
                for node in self.tree(path).body:
                    if isinstance(node, ast.ClassDef):
                        out.setdefault(node.name, []).append(f"{module}.{node.name}")
        return out

    def tree(self, path: Path) -> ast.Module:
        if path not in self._trees:
            self._trees[path] = ast.parse(path.read_text(encoding="utf-8"))
        return self._trees[path]

    def bindings(self, module: str) -> dict[str, ast.AST]:
        """A module's top-level names (a namespace package: none but its submodules)."""
        path = self.modules[module]
        return {} if path.is_dir() else dict(_bindings(self.tree(path).body))

    def package_of(self, module: str) -> str:
        """What a relative import in ``module`` starts from."""
        path = self.modules.get(module)
        return module if path is not None and path.name == "__init__.py" \
            else module.rpartition(".")[0]

    # Names.

    def resolves(self, name: str) -> bool:
        """Whether an absolute dotted name of ours exists: imported where it can be, read
        where it cannot, and read where the import says no (an attribute ``__init__`` sets)."""
        if name not in self._resolved:
            self._resolved[name] = False  # while it is looked up: an import cycle ends here
            self._resolved[name] = (name.split(".")[0] in IMPORTED and self._by_import(name)) \
                or self._by_source(name.split("."))
        return self._resolved[name]

    def _by_import(self, name: str) -> bool:
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj: Any = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue  # not a module, or it needs an engine: a shorter one, or the source
            for part in parts[cut:]:
                try:
                    obj = getattr(obj, part)
                except AttributeError:
                    return False
            return True
        return False

    def _by_source(self, parts: list[str]) -> bool:
        cut = next((n for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in self.modules),
                   0)
        if not cut:
            return False
        module, rest = ".".join(parts[:cut]), parts[cut:]
        if not rest:
            return True
        bindings = self.bindings(module)
        node = bindings.get(rest[0])
        if node is None:
            return "__getattr__" in bindings  # a module-level __getattr__ may make any name
        if isinstance(node, ast.ClassDef):
            return self._in_class(module, node, rest[1:])
        if isinstance(node, ast.Import | ast.ImportFrom):
            return self._through_import(module, node, rest)
        return True  # a function or a value: what lies inside it the source does not say

    def _in_class(self, module: str, cls: ast.ClassDef, rest: list[str]) -> bool:
        if not rest:
            return True
        if rest[0] in _class_bindings(cls):
            inner = next((n for n in cls.body if isinstance(n, ast.ClassDef)
                          and n.name == rest[0]), None)
            return inner is None or self._in_class(module, inner, rest[1:])
        for base in map(ast.unparse, cls.bases):
            absolute = self._absolute(module, (), base)
            if absolute is None or absolute.split(".")[0] not in NAME_ROOTS:
                return base != "object"  # a base from outside the project may define anything
            if self.resolves(".".join([absolute, *rest])):
                return True
        return False

    def _through_import(self, module: str, node: ast.Import | ast.ImportFrom,
                        rest: list[str]) -> bool:
        if isinstance(node, ast.Import):
            alias = next(a for a in node.names if (a.asname or a.name).split(".")[0] == rest[0])
            target = [*(alias.name if alias.asname else rest[0]).split("."), *rest[1:]]
        else:
            alias = next(a for a in node.names if (a.asname or a.name) == rest[0])
            source = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                                 self.package_of(module)) \
                if node.level else node.module or ""
            target = [*source.split("."), alias.name, *rest[1:]]
        # Imported from outside the project: not ours to check.
        return target[0] not in NAME_ROOTS or self.resolves(".".join(target))

    def _absolute(self, module: str, scope: tuple[str, ...], dotted: str) -> str | None:
        """``dotted`` as Python reads it in ``module`` (inside the classes ``scope``), made
        absolute; None when its first part is bound neither there nor in those classes."""
        first = dotted.split(".")[0]
        if first in NAME_ROOTS:
            return dotted
        body: list[ast.stmt] = [] if self.modules[module].is_dir() else \
            self.tree(self.modules[module]).body
        classes: list[ast.ClassDef] = []
        for name in scope:
            found = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name),
                         None)
            if found is None:
                break
            classes.append(found)
            body = found.body
        for depth in range(len(classes), 0, -1):
            if first in _class_bindings(classes[depth - 1]):
                return ".".join([module, *scope[:depth], dotted])
        return f"{module}.{dotted}" if first in self.bindings(module) else None

    # Paths.

    def path_problem(self, match: re.Match[str]) -> str | None:
        """What is wrong with a path match (None: nothing); ``"skip"`` for a placeholder."""
        path = match.group("path").rstrip(".,;:")
        if any(part.split(".")[0] in PLACEHOLDERS for part in path.split("/")):
            return "skip"
        if "*" in path:
            return None if glob.glob(str(self.root / path)) else "matches no file"
        target = self.root / path
        if not target.exists():
            return "does not exist"
        if match.group("first"):
            if not target.is_file():
                return "is not a file"
            lines = len(target.read_text(encoding="utf-8", errors="replace").splitlines())
            last = int(match.group("last") or match.group("first"))
            if not 1 <= int(match.group("first")) <= last <= lines:
                return f"has {lines} lines"
        if match.group("node") and target.suffix == ".py":
            body: list[ast.stmt] = self.tree(target).body
            for name in match.group("node").split("::"):
                found = next((n for n in body if isinstance(n, ast.FunctionDef
                                                            | ast.AsyncFunctionDef | ast.ClassDef)
                              and n.name == name.split("[")[0]), None)
                if found is None:
                    return f"has no test {match.group('node')}"
                body = found.body if isinstance(found, ast.ClassDef) else []
        return None

    # The checks.

    def check_paths(self, text: str, locate: Locate, report: Report) -> None:
        for match in PATH.finditer(text):
            problem = self.path_problem(match)
            report.checked["path"] += 1
            spelled = match.group(0).rstrip(".,;:")
            if problem == "skip":
                report.skipped.append(f"{locate(match.start())}: `{spelled}`: a placeholder")
            elif problem:
                report.problems.append(f"{locate(match.start())}: path `{spelled}` {problem}")

    def check_names(self, code: str, locate: Locate, report: Report, *, relative: bool,
                    imported: dict[str, str] | None = None) -> None:
        """Names of ours in code: absolute ones, dotted ones that start with a name the block
        ``imported`` from our packages (name -> where from), and with ``relative`` those that
        start with the last part of one of our modules or the name of one of our classes."""
        imported = imported or {}
        code = PATH.sub(lambda m: " " * len(m.group(0)), URL.sub(
            lambda m: " " * len(m.group(0)), code))
        for match in NAME.finditer(code):
            name = match.group("name")
            if name.startswith(".") or "." in name and name.rsplit(".", 1)[1] in FILE_SUFFIXES:
                continue
            if match.group("attr"):
                name = f"{name}.{match.group('attr')}"
            first, at = name.split(".")[0], locate(match.start())
            if first in NAME_ROOTS:
                absolute = name
            elif "." in name and first in imported:
                absolute = imported[first] + name[len(first):]
            elif relative and "." in name and first in self.homes:
                homes = self.homes[first]
                if len(homes) > 1:
                    report.skipped.append(f"{at}: `{name}`: `{first}` is {' or '.join(homes)}")
                    continue
                absolute = homes[0] + name[len(first):]
            else:
                continue
            report.checked["name"] += 1
            if not self.resolves(absolute):
                shown = "" if absolute == name else f" (`{absolute}`)"
                report.problems.append(f"{at}: name `{name}`{shown} does not resolve")

    def check_markdown(self, page: str, where: str, folder: Path) -> Report:
        """One markdown page's names, paths and links (``folder``: the page's, from the
        root)."""
        report = Report()
        prose, blocks = _without_fences(page)
        for offset, block in blocks:
            locate = _locator(where, page, offset)
            self.check_paths(block, locate, report)
            imported: dict[str, str] = {}
            for match in FROM_IMPORT.finditer(block):
                module, names = match.groups()
                if module.split(".")[0] not in NAME_ROOTS:
                    continue
                for name in filter(None, (n.split()[0] for n in names.split(",") if n.split())):
                    imported[name] = f"{module}.{name}"
                    report.checked["name"] += 1
                    if not self.resolves(f"{module}.{name}"):
                        report.problems.append(f"{locate(match.start())}: name "
                                               f"`{module}.{name}` does not resolve")
            self.check_names(block, locate, report, relative=False, imported=imported)
        for span in list(_spans(prose)):
            locate = _locator(where, page, span.start(2))
            self.check_paths(span.group(2), locate, report)
            self.check_names(span.group(2), locate, report, relative=True)
            prose = _blank(prose, span.start(), span.end())
        for match in [*LINK.finditer(prose), *REFERENCE.finditer(prose)]:
            self.check_link(match.group("target"), _locator(where, page)(match.start()), where,
                            folder, report)
            prose = _blank(prose, match.start("target"), match.end("target"))
        self.check_paths(prose, _locator(where, page), report)
        return report

    def check_link(self, target: str, at: str, where: str, folder: Path,
                   report: Report) -> None:
        if SCHEME.match(target) or target.startswith("/"):
            return  # a URL, or not a file of the checkout
        report.checked["link"] += 1
        file, _, anchor = target.partition("#")
        path = self.root / (folder / file if file else where)
        if not path.exists():
            report.problems.append(f"{at}: link `{target}`: no such file")
        elif anchor and path.suffix == ".md" and \
                anchor not in anchors(path.read_text(encoding="utf-8")):
            report.problems.append(f"{at}: link `{target}`: no such heading")

    def check_docstring(self, text: str, where: str, module: str, scope: tuple[str, ...] = (),
                        first_line: int = 1) -> Report:
        """One docstring's roles, literals and paths, read in ``module`` (inside the classes
        ``scope``)."""
        report = Report()
        rest = text
        for role in ROLE.finditer(text):
            self.check_role(role, _locator(where, text, 0, first_line)(role.start()), module,
                            scope, report)
            rest = _blank(rest, role.start(), role.end())
        for literal in list(_spans(rest, LITERAL, 1)):
            locate = _locator(where, text, literal.start(1), first_line)
            self.check_paths(literal.group(1), locate, report)
            self.check_names(literal.group(1), locate, report, relative=True)
            rest = _blank(rest, literal.start(), literal.end())
        self.check_paths(URL.sub(lambda m: " " * len(m.group(0)), rest),
                         _locator(where, text, 0, first_line), report)
        return report

    def check_role(self, role: re.Match[str], at: str, module: str, scope: tuple[str, ...],
                   report: Report) -> None:
        """A role's target, read as Python reads a name in ``module``: see the module's
        docstring."""
        target = re.sub(r"^.*<(.+)>$", r"\1", re.sub(r"\s+", "", role.group("target")))
        target = target.lstrip("~!").removesuffix("()")
        at = f"{at}: :{role.group('role')}:`{role.group('target')}`"
        first = target.split(".")[0]
        if target.startswith("."):
            relative = target.lstrip(".")
            try:
                absolute: str | None = importlib.util.resolve_name(
                    target[:len(target) - len(relative)] + relative.split(".")[0],
                    self.package_of(module)) + relative[len(relative.split(".")[0]):]
            except ImportError:
                absolute = None  # more dots than the package has parents
        else:
            absolute = self._absolute(module, scope, target)
        if absolute is None and first in self.homes:
            if len(self.homes[first]) > 1:
                report.skipped.append(f"{at}: `{first}` is {' or '.join(self.homes[first])}")
                return
            absolute = self.homes[first][0] + target[len(first):]
        if absolute is None and ("." in target or role.group("role") == "mod") \
                and (first in THIRD_PARTY or first in sys.stdlib_module_names):
            report.checked["foreign"] += 1
            return
        report.checked["role"] += 1
        if absolute is None:
            report.problems.append(f"{at}: `{first}` is bound nowhere in {module}; write "
                                   "another project's name out in full")
        elif not self.resolves(absolute):
            report.problems.append(f"{at}: `{absolute}` does not resolve")

    def check_all(self) -> Report:
        """Every page and every docstring of the product."""
        report = Report()
        pages = [self.root / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")]
        for page in [*pages, *sorted((self.root / "docs").glob("*.md"))]:
            where = page.relative_to(self.root).as_posix()
            report.add(self.check_markdown(page.read_text(encoding="utf-8"), where,
                                           page.parent.relative_to(self.root)))
        for module, path in sorted(self.modules.items()):
            if module.split(".")[0] in PRODUCT and not path.is_dir():
                for scope, text, line in _docstrings(self.tree(path).body):
                    report.add(self.check_docstring(
                        text, path.relative_to(self.root).as_posix(), module, scope, line))
        return report


CHECKER = Checker()


@cache
def checked() -> Report:
    """The checkout's documents, read once for the tests below."""
    return CHECKER.check_all()


def test_every_name_path_and_link_resolves() -> None:
    report = checked()
    # Enough was read that an empty list of problems means something.
    assert report.checked["name"] > 80 and report.checked["path"] > 200
    assert report.checked["link"] > 60 and report.checked["role"] > 150
    assert report.problems == [], "\n".join(
        [f"{len(report.problems)} names, paths or links resolve to nothing:", *report.problems])


def test_skips_are_few() -> None:
    """The skip rules stay narrow: a reading that starts skipping much is a wrong reading."""
    skipped = checked().skipped
    assert len(skipped) <= 10, "\n".join(skipped)


FAKE_PAGE = """# A page

See `harmony_plugins.no_such_module.thing`, `compat.no_such_function`, `tests/no_such_file.py`,
`tests/test_turn.py::test_no_such_test`, `harmony_plugins/cli.py:99999` and
[the rules](rules.md#no-such-heading), [gone](gone.md). Fine: `harmony_plugins.Turn.declare`,
`compat.StreamableParser`, `vllm/parser/harmony.py`, `serving.py:1292`, [rules](rules.md),
`items.problem()`, `tests/FILE.py::NAME`.

```bash
python -m sglang_ext.no_such_module
```

```python
from harmony_plugins import compat, gone   # a comment after the names
from harmony_plugins import (Turn,
                             Request)
compat.no_such_name(Turn.feed_ids, Request.tool_choice, turn.anything)
```
"""


def test_the_check_reports_bad_names_paths_and_links() -> None:
    report = CHECKER.check_markdown(FAKE_PAGE, "docs/fake.md", Path("docs"))
    assert report.problems == [
        "docs/fake.md:10: name `sglang_ext.no_such_module` does not resolve",
        "docs/fake.md:14: name `harmony_plugins.gone` does not resolve",
        "docs/fake.md:17: name `compat.no_such_name` (`harmony_plugins.compat.no_such_name`) "
        "does not resolve",
        "docs/fake.md:3: name `harmony_plugins.no_such_module.thing` does not resolve",
        "docs/fake.md:3: name `compat.no_such_function` "
        "(`harmony_plugins.compat.no_such_function`) does not resolve",
        "docs/fake.md:3: path `tests/no_such_file.py` does not exist",
        "docs/fake.md:4: path `tests/test_turn.py::test_no_such_test` has no test "
        "test_no_such_test",
        "docs/fake.md:4: path `harmony_plugins/cli.py:99999` has "
        f"{len((ROOT / 'harmony_plugins/cli.py').read_text().splitlines())} lines",
        "docs/fake.md:5: link `rules.md#no-such-heading`: no such heading",
        "docs/fake.md:5: link `gone.md`: no such file",
    ]
    assert len(report.skipped) == 2  # items (two adapters have one) and the placeholder path


def test_the_check_reads_a_docstring_s_names_as_its_module_does() -> None:
    text = ("Uses :meth:`Turn.declare` (``Turn`` is imported there), :func:`parse_text`, "
            ":mod:`.compat`, :class:`StepBuilder` (one class of ours has that name), "
            ":class:`openai_harmony.Message`, :mod:`json` and ``rules.OUTCOMES``; not "
            ":meth:`Turn.nothing`, :mod:`.nothing`, :func:`gone` nor\n"
            "``harmony_plugins/nothing.py``.")
    report = CHECKER.check_docstring(text, "harmony_plugins/_parser.py", "harmony_plugins._parser")
    assert report.problems == [
        "harmony_plugins/_parser.py:1: :meth:`Turn.nothing`: "
        "`harmony_plugins._parser.Turn.nothing` does not resolve",
        "harmony_plugins/_parser.py:1: :mod:`.nothing`: `harmony_plugins.nothing` does not "
        "resolve",
        "harmony_plugins/_parser.py:1: :func:`gone`: `gone` is bound nowhere in "
        "harmony_plugins._parser; write another project's name out in full",
        "harmony_plugins/_parser.py:2: path `harmony_plugins/nothing.py` does not exist"]
    assert report.checked["foreign"] == 2 and report.checked["role"] == 7
