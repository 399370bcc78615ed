"""Cost of checking a call's arguments when it ends (contract section 4). Prints figures.

    .venv/bin/python scripts/measure_call_check.py

Not a test (no timing assertions anywhere): it times, for a typical tool schema,
building a validator (once per process and schema), finding it again (once per parser and
tool), the check alone per call, and a whole
parse of calls with and without the check.
"""

from __future__ import annotations

import time

from harmony_plugins import StreamParser, checks, rules

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "hourly": {"type": "boolean"},
    },
    "required": ["city"],
    "additionalProperties": False,
}}}]
ARGS = '{"city": "Paris", "units": "metric", "days": 3, "hourly": false}'
CALL = ("<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        f"<|message|>{ARGS}<|call|>")


def best(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    schema = TOOLS[0]["function"]["parameters"]
    n = 200
    def fresh() -> None:
        checks._cache.clear()
        checks.build_validator(schema)

    build = best(lambda: [fresh() for _ in range(n)]) / n
    cached = best(lambda: [checks.build_validator(schema) for _ in range(n)]) / n
    checker = checks.ArgumentChecker({"get_weather": schema})
    checker.check("get_weather", ARGS)  # build once
    m = 20_000
    check = best(lambda: [checker.check("get_weather", ARGS) for _ in range(m)]) / m
    bad = best(lambda: [checker.check("get_weather", '{"city": 7}') for _ in range(m)]) / m
    text = CALL * 2_000

    def parse() -> None:
        parser = StreamParser(TOOLS)
        parser.feed_text(text)
        parser.close()

    with_check = best(parse) / 2_000
    real = checks.ArgumentChecker.check
    checks.ArgumentChecker.check = lambda self, name, arguments: rules.SURFACED  # type: ignore
    try:
        without = best(parse) / 2_000
    finally:
        checks.ArgumentChecker.check = real  # type: ignore[method-assign]
    print(f"validator build, first time in the process: {build * 1e6:8.1f} us")
    print(f"validator lookup (once per parser and tool): {cached * 1e6:7.1f} us")
    print(f"check per call, valid arguments:            {check * 1e6:8.1f} us")
    print(f"check per call, schema mismatch:            {bad * 1e6:8.1f} us")
    print(f"whole parse per call, with the check:       {with_check * 1e6:8.1f} us")
    print(f"whole parse per call, check stubbed out:    {without * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
