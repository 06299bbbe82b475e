"""The fuzzers' seed corpora are what Fuzz/make-corpus.py writes, and FuzzDispatch's
seeds call every method of the contract: a seed that names a method with the params it
takes starts the fuzzer inside that handler, where a corpus without it leaves the
fuzzer to find the name byte by byte first (issue 30's review found 9 of 19 missing)."""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "Fuzz" / "corpus"


def kept_by_hand(name: str) -> bool:
    return name.startswith(("crash-", "regression-"))


def test_the_committed_corpora_are_what_make_corpus_writes(tmp_path):
    subprocess.run([sys.executable, str(REPO / "Fuzz" / "make-corpus.py"), str(tmp_path)], check=True,
                   capture_output=True)
    targets = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
    assert sorted(p.name for p in tmp_path.iterdir()) == targets
    for target in targets:
        committed = sorted(p.name for p in (CORPUS / target).iterdir() if not kept_by_hand(p.name))
        written = sorted(p.name for p in (tmp_path / target).iterdir())
        assert committed == written, f"{target}: run python3 Fuzz/make-corpus.py"
        comparison = filecmp.cmpfiles(CORPUS / target, tmp_path / target, written, shallow=False)
        assert comparison[1:] == ([], []), f"{target}: {comparison[1]} differ; run python3 Fuzz/make-corpus.py"


def test_the_dispatch_seeds_call_every_method_of_the_contract():
    methods = {m["name"] for m in json.loads((REPO / "schema" / "openrpc.json").read_text())["methods"]}
    seeds = b"".join(p.read_bytes() for p in (CORPUS / "FuzzDispatch").iterdir())
    missing = sorted(m for m in methods if f'"method":"{m}"'.encode() not in seeds)
    assert missing == [], f"no FuzzDispatch seed calls {missing}: add them to Fuzz/make-corpus.py"
