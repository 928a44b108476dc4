"""The fuzz tests of test/test_fuzz.py run long: MBSIM_FUZZ_EXAMPLES examples per property
(default here 2000; `make test` runs 40) with fresh random draws instead of the suite's fixed
ones. Prints the count of examples and the outcome.

    .venv/bin/python bench/fuzz.py [EXAMPLES]
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    env = dict(os.environ, MBSIM_FUZZ_EXAMPLES=str(examples), MBSIM_FUZZ_RANDOM="1")
    print(f"fuzzing scenes, configs and commands: {examples} examples per property")
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(ROOT / "test" / "test_fuzz.py")], env=env, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main())
