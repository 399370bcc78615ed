"""Mutation testing of the core: does the core tier notice a small change to the code?

    .venv/bin/python scripts/mutants.py --sample 120 --seed N     # one command, any seed
    .venv/bin/python scripts/mutants.py --sample 40 --seed 7 --jobs 2
    .venv/bin/python scripts/mutants.py --only harmony_plugins/_guard.py:1121   # one again

The checkout's tracked files (as they are in the working tree) are copied into a temporary
folder (the checkout is never written). Every place in every module of the core
(``harmony_plugins/``, its sub-packages included) where one small change can be made is
listed: a comparison flipped (``==`` and ``!=``, ``<`` and ``>=``, ``is`` and ``is not``,
``in`` and ``not in``), ``and`` and ``or`` swapped, a ``not`` dropped, ``+`` and ``-``
swapped, ``True`` and ``False`` swapped, an integer constant plus one, an ``if``'s (or
``while``'s, or a conditional expression's) test negated. A sample of them is drawn with the
seed; for each, the one module is rewritten in the copy with that change alone and the core
tier (``tests`` without the engine folders, as ``scripts/test.sh`` runs it) runs there,
stopping at the first failure (the test files named for the mutated module first, on their
own: a quick kill). A mutant is *killed* when a test fails, *survived* when all pass.
Annotations, docstrings and the ``__all__`` lists are not mutated (a change there cannot
change behaviour).

The run prints each mutant as it is decided, then the score and every survivor: its file,
line, the change and the line of code it changed, and ``PATH:NODE`` for ``--only``. (Mutants
are numbered by their node in the module's syntax tree, not by line, so the command runs
unchanged on a core whose files changed; a ``PATH:NODE`` names a mutant of one version of its
file.) A survivor is either a gap in the tests (write the test that kills it) or an
*equivalent* mutant, one no input can tell apart from the original; ``CONTRIBUTING.md`` names
those, with why. Exit status 1 when fewer than ``--threshold`` percent are killed. It is a tool
beside CI, not in it: one mutant costs one pytest start (seconds when killed, the whole core
tier when it survives).
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = "harmony_plugins"

# The core tier's tests (-x stops at the first failure), named file by file so that the ones
# likeliest to fail for a change run first (pytest runs the files in the order given): the
# test files named for the mutated module, then these (those of them that exist), then the
# rest. A killed mutant costs seconds, not the whole tier.
FIRST = ["tests/test_contract.py", "tests/test_machine.py", "tests/test_turn.py",
         "tests/test_frontends.py", "tests/test_header.py", "tests/test_arguments.py",
         "tests/test_leaks.py", "tests/test_openai.py", "tests/test_cli.py"]
IGNORES = ["tests/vllm", "tests/e2e_vllm", "tests/sglang", "tests/gpu", "tests/wheel",
           "tests/test_benchmarks_smoke.py"]
"""What the core tier leaves out (``scripts/test.sh`` passes the same as ``--ignore``)."""


def core_tests(folder: Path) -> list[str]:
    """The core tier's test files and folders in ``folder``, those of :data:`FIRST` first."""
    every = sorted(p.relative_to(folder).as_posix() for p in (folder / "tests").glob("test_*.py"))
    every = [t for t in every if t not in IGNORES]
    order = [*(t for t in FIRST if t in every), *every]
    if (folder / "tests" / "shell").is_dir():
        order.append("tests/shell")
    return list(dict.fromkeys(order))


def named_tests(folder: Path, module: str) -> list[str]:
    """The core test files named for ``module`` (a path such as
    ``harmony_plugins/prompt/_chat.py``): a file whose name holds ``chat``, or whose text
    names ``harmony_plugins.prompt._chat``."""
    path = Path(module)
    stem = (path.parent.name if path.stem == "__init__" else path.stem).strip("_")
    dotted = ".".join(path.with_suffix("").parts).removesuffix(".__init__")
    return [t for t in core_tests(folder) if t.endswith(".py") and (
        stem in Path(t).stem.removeprefix("test_") or dotted in (folder / t).read_text())]


_FLIP: dict[type, type] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
    ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}
_BINARY: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add}


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the root
    node: int  # the node's number in ast.walk order
    line: int
    change: str


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside annotations, docstrings and ``__all__`` (never mutated)."""
    skip: set[int] = set()

    def drop(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            drop(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            drop(node.returns)
        elif isinstance(node, ast.AnnAssign):
            drop(node.annotation)
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            drop(node)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                drop(body[0])
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            drop(node)  # attribute docstrings
    return skip


def _change(node: ast.AST) -> str | None:
    """What mutating ``node`` does, or None where it cannot be mutated."""
    if isinstance(node, ast.Compare) and type(node.ops[0]) in _FLIP:
        return f"{type(node.ops[0]).__name__} -> {_FLIP[type(node.ops[0])].__name__}"
    if isinstance(node, ast.BoolOp):
        return "and -> or" if isinstance(node.op, ast.And) else "or -> and"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return "not dropped"
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return f"{type(node.op).__name__} -> {_BINARY[type(node.op)].__name__}"
    if isinstance(node, ast.Constant) and node.value.__class__ is bool:
        return f"{node.value} -> {not node.value}"
    if isinstance(node, ast.Constant) and node.value.__class__ is int:
        return f"{node.value} -> {node.value + 1}"
    if isinstance(node, ast.If | ast.While | ast.IfExp):
        return "test negated"
    return None


def _apply(node: ast.AST) -> None:
    if isinstance(node, ast.Compare):
        node.ops[0] = _FLIP[type(node.ops[0])]()
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.UnaryOp):  # `not x` -> `bool(x)`, in place
        call = ast.Call(ast.Name("bool", ast.Load()), [node.operand], [])
        node.__class__, node.__dict__ = ast.Call, call.__dict__
    elif isinstance(node, ast.BinOp):
        node.op = _BINARY[type(node.op)]()
    elif isinstance(node, ast.Constant) and node.value.__class__ is bool:
        node.value = not node.value
    elif isinstance(node, ast.Constant):
        node.value += 1
    else:
        node.test = ast.UnaryOp(ast.Not(), node.test)  # type: ignore[attr-defined]


def mutants(root: Path) -> Iterator[Mutant]:
    """Every mutation point of the core, in a stable order."""
    for path in sorted((root / CORE).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text())
        skip = _annotation_nodes(tree)
        for number, node in enumerate(ast.walk(tree)):
            change = None if id(node) in skip else _change(node)
            if change is not None:
                yield Mutant(rel, number, getattr(node, "lineno", 0), change)


def mutated_source(root: Path, mutant: Mutant) -> str:
    tree = ast.parse((root / mutant.path).read_text())
    for number, node in enumerate(ast.walk(tree)):
        if number == mutant.node:
            _apply(node)
            break
    return ast.unparse(ast.fix_missing_locations(tree))


def source_line(root: Path, mutant: Mutant) -> str:
    """The line of code the mutant changes, as written."""
    lines = (root / mutant.path).read_text().splitlines()
    return lines[mutant.line - 1].strip() if 0 < mutant.line <= len(lines) else ""


def run_tests(folder: Path, python: str, tests: list[str],
              timeout: float = 1800) -> tuple[bool, str]:
    """(passed, the first failure's line) of ``tests`` (files or folders) in ``folder``,
    stopping at the first failure. A run past ``timeout`` seconds failed (a mutant that
    hangs a test)."""
    command = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    env = {**os.environ, "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f} s"
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    last = (done.stdout.strip() or done.stderr.strip()).splitlines()[-1:]  # an import error
    return done.returncode == 0, (failed[0] if failed else " ".join(last)[-200:])


def survives(folder: Path, python: str, mutant: Mutant, timeout: float) -> tuple[bool, str]:
    """Whether the core tier in ``folder`` (the mutant applied there) passes: the test files
    named for the mutated module first, on their own (a quick kill: pytest collects only
    them), then the whole tier."""
    named = named_tests(folder, mutant.path)
    if named:
        passed, why = run_tests(folder, python, named, timeout)
        if not passed:
            return False, why
    return run_tests(folder, python, core_tests(folder), timeout)


def copy_tree(root: Path, into: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = root / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="copies tested at once")
    parser.add_argument("--threshold", type=float, default=95.0)
    parser.add_argument("--only", nargs="+", metavar="PATH:NODE",
                        help="run these mutants (as a survivor is listed) instead of a sample")
    args = parser.parse_args()
    every = list(mutants(ROOT))
    if args.only:
        wanted = {tuple(spec.rsplit(":", 1)) for spec in args.only}
        sample = [m for m in every if (m.path, str(m.node)) in wanted]
    else:
        sample = sorted(random.Random(args.seed).sample(every, min(args.sample, len(every))),
                        key=lambda m: (m.path, m.line))
    print(f"{len(every)} mutation points in {CORE}/; running {len(sample)} "
          f"({'as named' if args.only else f'sampled, seed {args.seed}'})", flush=True)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="harmony-ext-mutants-") as tmp:
        copies = [Path(tmp) / f"copy{j}" for j in range(args.jobs)]
        for copy in copies:
            copy_tree(ROOT, copy)
        began = time.monotonic()
        passed, why = run_tests(copies[0], sys.executable, core_tests(copies[0]))
        if not passed:
            print(f"the unmutated core tier fails in the copy: {why}")
            return 2
        # A mutant's run that takes thrice the unmutated tier's time (and 5 minutes) hangs.
        limit = max(300.0, 3 * (time.monotonic() - began))
        print(f"the unmutated core tier passes in the copy ({time.monotonic() - began:.0f} s)",
              flush=True)
        free = list(copies)

        def one(mutant: Mutant) -> tuple[Mutant, bool, str]:
            copy = free.pop()
            target = copy / mutant.path
            original = target.read_text()
            try:
                target.write_text(mutated_source(copy, mutant))
                survived, why = survives(copy, sys.executable, mutant, limit)
            finally:
                target.write_text(original)
                free.append(copy)
            return mutant, survived, why

        survivors = []
        with ThreadPoolExecutor(args.jobs) as pool:
            for k, (mutant, survived, why) in enumerate(pool.map(one, sample), 1):
                status = "SURVIVED" if survived else "killed"
                print(f"[{k}/{len(sample)}] {status:8} {mutant.path}:{mutant.line} "
                      f"{mutant.change}" + ("" if survived else f"  ({why[:90]})"), flush=True)
                if survived:
                    survivors.append(mutant)
    killed = len(sample) - len(survivors)
    rate = 100.0 * killed / len(sample) if sample else 100.0
    drawn = "as named" if args.only else f"seed {args.seed}"
    print(f"\nkilled {killed} of {len(sample)} ({rate:.1f}%), {len(survivors)} survived "
          f"({drawn}, {time.monotonic() - start:.0f} s)")
    for mutant in survivors:
        print(f"  survived: {mutant.path}:{mutant.node} (line {mutant.line}: {mutant.change}:"
              f" {source_line(ROOT, mutant)})")
    return 0 if rate >= args.threshold else 1


if __name__ == "__main__":
    sys.exit(main())
