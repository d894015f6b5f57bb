"""How long ``python -m evalkit.sweep`` takes to answer ``--help`` and a config error (hyperfine-like).

Runs each command N times in a fresh interpreter, prints the median and the spread, then the
slowest imports of ``import evalkit.sweep`` (``python -X importtime``, cumulative microseconds).
Wall time on a shared machine is noisy: compare medians taken at the same load, and read the
import breakdown, which does not depend on the load as much::

    python benchmarks/startup.py [--runs 7] [--top 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "sweep --help": [sys.executable, "-m", "evalkit.sweep", "--help"],
    "sweep top_k=abc (config error)": [sys.executable, "-m", "evalkit.sweep", "top_k=abc"],
}


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def import_breakdown(top: int) -> list[tuple[int, int, str]]:
    """(cumulative us, self us, module) of the ``top`` slowest imports under ``import evalkit.sweep``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import evalkit.sweep"], capture_output=True, text=True, check=True
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative_us, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        rows.append((int(cumulative_us), int(self_us), name))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for label, command in COMMANDS.items():
        timed(command)  # a warm-up: the first run reads the files from disk
        times = [timed(command) for _ in range(args.runs)]
        print(
            f"{label}: median {statistics.median(times):.2f} s, "
            f"min {min(times):.2f} s, max {max(times):.2f} s ({args.runs} runs)"
        )
    print("\nimport evalkit.sweep, slowest imports (cumulative / self, ms):")
    for cumulative, own, name in import_breakdown(args.top):
        print(f"  {cumulative / 1000:8.1f} {own / 1000:8.1f}  {name}")


if __name__ == "__main__":
    main()
