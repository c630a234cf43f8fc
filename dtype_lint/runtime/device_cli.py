"""``dtype-lint device [--json]``: print :func:`~dtype_lint.runtime.device.device_report`."""

from __future__ import annotations

import argparse
import json

from dtype_lint.runtime.device import device_report, format_report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="dtype-lint device",
        description="Report devices, native dtype support, TF32/matmul settings and the "
                    "measured precision of float32/bfloat16/float16 matmuls.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = device_report()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report), end="")
    return 0
