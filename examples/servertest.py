"""Starting and stopping a demo server as a real subprocess, for examples/*/test_server.py
(standard library only; a test file puts examples/ on sys.path to import it)."""

import os
import signal
import subprocess
import sys
import time


def start_server(server, folder, *args, env=None):
    """(process, port) of `server.py --port 0 --quiet *args`, once it has written its port.
    Its stdout and stderr are pipes (text): a test may read what it printed."""
    port_file = folder / f"port-{time.monotonic_ns()}"
    proc = subprocess.Popen([sys.executable, str(server), "--port", "0", "--port-file", str(port_file),
                             "--quiet", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})}, text=True)
    deadline = time.monotonic() + 10
    while not (port_file.exists() and port_file.read_text().strip()):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "server did not write its port file"
        time.sleep(0.02)
    return proc, int(port_file.read_text())


def stop_server(proc):
    """SIGTERM, as a service manager stops it; its exit status (killed if it does not stop)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
