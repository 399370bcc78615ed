"""What a fuzz test records (``harmony_ext_testing.fuzzed_outputs.record``) reaches a JUnit
report as scripts/fuzz_counts.py reads it: a probe test run by pytest with ``--junitxml`` in a
temporary folder, the script run on its report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = '''
from harmony_ext_testing import fuzzed_outputs as fz

def test_fuzzed_outputs_probe(record_testsuite_property):
    out = fz.output(fz.SEED)
    fz.record(record_testsuite_property, 7, [fz.Failure(out, "x", "y"),
                                             fz.Failure(out, "z", "w")])
'''


def test_what_a_fuzz_test_records_reaches_the_report(tmp_path: Path) -> None:
    """The properties ``fuzzed_outputs.record`` writes, through pytest's JUnit report, read by
    the script: 7 outputs tried, 1 of them (two invariants) failed."""
    (tmp_path / "test_fuzzed_outputs_probe.py").write_text(PROBE)
    xml = tmp_path / "report.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path / "test_fuzzed_outputs_probe.py"), f"--junitxml={xml}",
                           "--rootdir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    printed = subprocess.run([sys.executable, str(ROOT / "scripts" / "fuzz_counts.py"), str(xml)],
                             capture_output=True, text=True, check=True).stdout
    assert printed == "fuzzer: 7 outputs tried, 1 failed\n"
