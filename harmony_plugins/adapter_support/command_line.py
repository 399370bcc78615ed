"""What an engine's command line selects, read before the engine parses it.

Both engines load plugins in every process before their arguments are parsed (the
schedulers' processes too, whose ``sys.argv`` is the server's), so a hook that only matters
with ``harmony-ext`` selected (the generation guard in the scheduler) is installed where the
command line may select it, and a warning about a selection is given before the engine acts
on it. Both engines spell the parser options ``--tool-call-parser`` and
``--reasoning-parser`` (underscores accepted), and both read a YAML file named by ``--config``,
which the plugin cannot read first.
"""

from __future__ import annotations

PARSER_FLAGS = ("--tool-call-parser", "--reasoning-parser")


def selects(argv: list[str], name: str) -> bool:
    """Whether a command line names ``name`` as the tool-call or reasoning parser."""
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag.replace("_", "-") in PARSER_FLAGS:
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) else ""
            if value == name:
                return True
    return False


def may_select(argv: list[str], name: str) -> bool:
    """Whether a command line may select ``name``: it names it (:func:`selects`), or it names
    a configuration file (``--config``) whose choices only the engine reads."""
    return selects(argv, name) or any(a == "--config" or a.startswith("--config=")
                                      for a in argv)
