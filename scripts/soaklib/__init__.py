"""The parts of scripts/soak: chaos (kills and faults) and oracle (records and checks)."""

import sys
import time

T0 = time.monotonic()


def log(*args):
    print(f"[soak {time.monotonic() - T0:8.2f}s]", *args, file=sys.stderr, flush=True)
