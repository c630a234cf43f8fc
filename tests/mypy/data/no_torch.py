"""No torch import (quick to check): for --disable-error-code and the crash test."""
import multiprocessing
from typing import Any


def cast(model: Any) -> None:
    multiprocessing.Process(target=lambda: None).start()  # expect: DTL201
