#!/usr/bin/env python3
"""What the mutations ledger costs an accepted follow (issue 31 §2), counted by
callgrind, peers side by side: each BIN follows N distinct entities on the local
backend (each a new intent, confirmed: two ledger lines), then asks `sync` so that
every one has settled before stdin closes. The figure is (the N-follow run − the
1-follow run) ÷ (N − 1): start-up and the clean stop's compactions cancel out only in
part (they grow with N), as they would in a run that long.

    python3 bench/ledger.py BIN...   (e.g. a release build of main, then the branch's)

Release builds: `swift build -c release --scratch-path DIR --product netmodel`.
Needs valgrind. Writes the callgrind files to $OUT (default /tmp/nm-ledger-bench);
N (default 2001) from $N.
"""

import json
import os
import subprocess
import sys
import tempfile

OUT = os.environ.get("OUT", "/tmp/nm-ledger-bench")
N = int(os.environ.get("N", "2001"))


def instructions(binary: str, count: int, tag: str) -> int:
    out = f"{OUT}/follow-{tag}-{count}.out"
    with tempfile.TemporaryDirectory() as state:
        proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "serve", "--state-dir", state],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        lines = [
            {"jsonrpc": "2.0", "id": i + 1, "method": "follow", "params": {"kind": "artist", "id": f"a{i}"}}
            for i in range(count)
        ]
        lines.append({"jsonrpc": "2.0", "id": "sync", "method": "sync", "params": {"timeoutMs": 600000}})
        assert proc.stdin and proc.stdout
        proc.stdin.write("".join(json.dumps(m, separators=(",", ":")) + "\n" for m in lines).encode())
        proc.stdin.flush()
        for line in proc.stdout:
            reply = json.loads(line)
            if reply.get("id") == "sync":
                settled = reply["result"]["settled"]
                assert len(settled) == count and all(s["outcome"] == "confirmed" for s in settled), reply
                break
        proc.stdin.close()
        proc.wait()
    with open(out) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("summary"))


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    for index, binary in enumerate(sys.argv[1:]):
        first = instructions(binary, 1, str(index))
        last = instructions(binary, N, str(index))
        print(f"{binary}: {(last - first) // (N - 1)} instructions an accepted follow")


if __name__ == "__main__":
    main()
