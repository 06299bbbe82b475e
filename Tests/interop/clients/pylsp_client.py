"""Drive `netmodel serve` with pylsp_jsonrpc (python-lsp-jsonrpc).

Run with any interpreter that has pylsp_jsonrpc (the venv's PyPI copy, or
Debian's /usr/bin/python3 with python3-pylsp-jsonrpc):

    NETMODEL_BIN=... NM_OUT=out.json python pylsp_client.py

Writes what it saw as JSON to $NM_OUT; test_clients.py asserts on it.

What pylsp_jsonrpc puts on the wire (streams.py / endpoint.py):
  * headers "Content-Length: N\\r\\n" THEN "Content-Type:
    application/vscode-jsonrpc; charset=utf8\\r\\n\\r\\n" (note "utf8", no dash);
  * ids: str(uuid.uuid4()) -- strings, never numbers;
  * params=None -> member omitted (Endpoint.request/notify);
  * JSON from ujson when importable -- it is: the PyPI wheel pulls it in and
    Debian's python3-pylsp-jsonrpc depends on python3-ujson: compact, "/"
    escaped as "\\/" (so "$/cancelRequest" arrives as "$\\/cancelRequest",
    "a/b" as "a\\/b"), non-ASCII as \\uXXXX; only without ujson does it fall
    back to the stdlib's '{"jsonrpc": "2.0", "id": ...}' (spaces after ":" ",");
  * observed on the wire (both flavours):
      Content-Length: 78\\r\\nContent-Type: application/vscode-jsonrpc; charset=utf8\\r\\n\\r\\n
      {"jsonrpc":"2.0","id":"8cbfc7e6-60e9-42f9-bd65-d71f332989b3","method":"stats"}
What it expects back:
  * the FIRST header line must be exactly "Content-Length: N" (case and the one
    space matter: any other first line gives read(None) = read to EOF, a hang);
  * every message must carry "jsonrpc": "2.0" or it is dropped silently;
  * replies are matched by dict lookup on the id: the string must come back
    unchanged;
  * cancelling a future sends $/cancelRequest, but a late reply for it then
    kills the reader thread (InvalidStateError): don't race cancel in tests.
"""

import json
import os
import subprocess
import sys
import threading

from pylsp_jsonrpc import exceptions
from pylsp_jsonrpc.endpoint import Endpoint
from pylsp_jsonrpc.streams import JsonRpcStreamReader, JsonRpcStreamWriter

TIMEOUT = 10


def main():
    bin_path = os.environ["NETMODEL_BIN"]
    out_path = os.environ["NM_OUT"]
    stderr_path = os.environ.get("NM_STDERR", os.devnull)
    res = {"steps": {}, "received": [], "python": sys.version, "ujson": False}
    try:
        import ujson  # noqa: F401

        res["ujson"] = True
    except ImportError:
        pass

    with open(stderr_path, "wb") as errf:
        proc = subprocess.Popen(
            [bin_path, "serve", "--log-level", "debug"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errf,
        )
    try:
        writer = JsonRpcStreamWriter(proc.stdin)
        reader = JsonRpcStreamReader(proc.stdout)
        endpoint = Endpoint({}, writer.write)

        def consume(msg):
            res["received"].append(msg)
            endpoint.consume(msg)

        t = threading.Thread(target=reader.listen, args=(consume,), daemon=True)
        t.start()

        def call(name, method, params=None):
            step = {"method": method}
            fut = endpoint.request(method, params)
            try:
                step["result"] = fut.result(timeout=TIMEOUT)
                step["ok"] = True
            except exceptions.JsonRpcException as e:
                step["ok"] = False
                step["code"] = e.code
                step["message"] = e.message
            except Exception as e:  # timeout and friends
                step["ok"] = False
                step["exception"] = repr(e)
            res["steps"][name] = step
            return step

        call("initialize", "initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {}})
        endpoint.notify("initialized", {})
        call("stats", "stats")  # params None -> omitted
        call("stats_empty", "stats", {})
        call("unknown", "netmodel/noSuchMethod")
        # Unknown id: must be ignored (ujson sends the method as "$\/cancelRequest").
        endpoint.notify("$/cancelRequest", {"id": "00000000-0000-0000-0000-000000000000"})
        call("stats_final", "stats")
        call("shutdown", "shutdown")
        endpoint.notify("exit")
        try:
            res["exit_code"] = proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            res["exit_code"] = None
        t.join(timeout=2)
        res["reader_alive"] = t.is_alive()
        endpoint.shutdown()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        with open(out_path, "w") as f:
            json.dump(res, f)


if __name__ == "__main__":
    main()
