"""Print what `pip install ENGINE==VERSION` asks for, less what a CPU tier leaves out.

    python scripts/engine_requirements.py DIST [--leave-out NAME]... [--replace NAME=REQUIREMENT]...

Run by the engine set-up scripts with the engine venv's interpreter, after the engine itself was
installed with --no-deps: it reads the installed distribution's own Requires-Dist (its metadata,
not a copied list), keeps those whose environment marker holds for this interpreter and that no
extra guards, drops the names given with --leave-out, puts REQUIREMENT in place of the names given
with --replace, and prints one requirement per line for pip to install with their dependencies.
A --leave-out or --replace name the engine does not require is an error: the set-up script's list
of what it changes must name only what it changes.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a fresh venv: pip carries its own copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name


def wanted(dist: str) -> list[Requirement]:
    """The distribution's requirements that apply here, extras excluded."""
    kept = []
    for line in metadata.requires(dist) or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            kept.append(requirement)
    return kept


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist")
    parser.add_argument("--leave-out", action="append", default=[], metavar="NAME")
    parser.add_argument("--replace", action="append", default=[], metavar="NAME=REQUIREMENT")
    args = parser.parse_args(argv)
    leave_out = {canonicalize_name(name) for name in args.leave_out}
    replace = {}
    for item in args.replace:
        name, _, requirement = item.partition("=")
        replace[canonicalize_name(name)] = requirement
    required = wanted(args.dist)
    names = {canonicalize_name(r.name) for r in required}
    unknown = sorted((leave_out | replace.keys()) - names)
    if unknown:
        print(f"{args.dist} does not require {', '.join(unknown)} here", file=sys.stderr)
        return 1
    for requirement in required:
        name = canonicalize_name(requirement.name)
        if name in leave_out:
            continue
        print(replace.get(name, str(requirement)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
