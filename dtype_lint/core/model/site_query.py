"""Where an interpreter finds installed packages, without the standard library (whose
modules hold no model, dataset or casting helper, and would cost a summary each).

Standard library only: an interpreter the user chose to run (``--python``,
``DTYPE_LINT_PYTHON``) runs this file by its path and prints the list as JSON; this one
imports it.
"""

import json
import sys
import sysconfig


def package_paths() -> list[str]:
    paths = sysconfig.get_paths()
    std = {paths["stdlib"], paths["platstdlib"]}
    return [p for p in sys.path if p and p not in std and not p.endswith(("lib-dynload", ".zip"))]


if __name__ == "__main__":
    del sys.path[0]  # this file's own folder, which Python puts first for a script
    print(json.dumps(package_paths()))
