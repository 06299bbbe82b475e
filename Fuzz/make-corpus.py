#!/usr/bin/env python3
"""Writes the seed corpora: Fuzz/corpus/FuzzDispatch/ and one folder per focused target.

Each file is one selector byte (how the split run cuts the rest, see ChunkPlan in
Fuzz/FuzzDispatch/FuzzDispatch.swift) followed by the bytes a peer sends on one
connection. Run from anywhere: python3 Fuzz/make-corpus.py [CORPUS_DIR] (default
Fuzz/corpus; Tests/interop/test_fuzz_corpus.py writes a copy elsewhere and compares).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def req(method, id=1, params=None, **extra):
    message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    message.update(extra)
    return json.dumps(message, separators=(",", ":"))


def note(method, params=None):
    message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":"))


def nd(*lines):
    return "".join(line + "\n" for line in lines).encode()


def cl(*bodies, header="Content-Length"):
    out = b""
    for body in bodies:
        data = body.encode() if isinstance(body, str) else body
        out += f"{header}: {len(data)}\r\n\r\n".encode() + data
    return out


# Selector bytes: low 3 bits pick the largest chunk (1, 2, 3, 5, 8, 17, 64, 4097),
# bit 3 fixes the size, the high bits seed the random sizes.
SEEDS = {
    "nd-initialize": (0x07, nd(req("initialize", params={}))),
    "cl-initialize": (0x0F, cl(req("initialize"))),
    "cl-headers": (
        0x12,
        b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
        + f"Content-Type: x\r\nContent-Length:  {len(req('rpc.discover', id=2))} \r\n\r\n".encode()
        + req("rpc.discover", id=2).encode(),
    ),
    "cl-lf-only": (0x01, f"Content-Length: {len(req('initialize', id=3))}\n\n".encode() + req("initialize", id=3).encode() + b"\n\n"),
    "cl-partial-header": (0x00, b"Content-Length: 4"),
    "cl-partial-body": (0x09, b"Content-Length: 100\r\n\r\n" + req("initialize").encode()),
    "cl-bad-headers": (
        0x23,
        b"Content-Length: abc\r\n\r\n{}"
        + b"Content-Type: x\r\n\r\n"
        + b"Content-Length: 9999999999999999\r\n\r\n"
        + b"Content-Length: -1\r\n\r\n"
        + b"Content-Length:\r\n\r\n"
        + cl(note("x")),
    ),
    "cl-oversized": (0x0E, b"Content-Length: 5000\r\n\r\n" + b"[" * 5000 + cl(req("shutdown"))),
    "nd-oversized": (0x36, b'{"a":"' + b"x" * 4200 + b'"}\n' + nd(req("initialize", id="after"))),
    "nd-batch-empty": (0x05, nd("[]", "[ ]")),
    "nd-batch-mixed": (
        0x44,
        nd(
            "["
            + ",".join(
                [
                    req("initialize", id=1),
                    note("ignored"),
                    "1",
                    req("nope", id="x"),
                    '{"jsonrpc":"2.0","id":2,"result":0}',
                    req("shutdown", id=3, params=[]),
                    req("initialize", id=4),
                ]
            )
            + "]"
        ),
    ),
    "nd-batch-notifications": (
        0x52,
        nd("[" + note("a") + "," + note("$/cancelRequest", {"id": 1}) + "," + note("exit") + "]"),
    ),
    "nd-invalid-requests": (
        0x0B,
        nd(
            '{"jsonrpc":"1.0","id":1,"method":"initialize"}',
            '{"id":1,"method":"initialize"}',
            '{"jsonrpc":"2.0","id":[1],"method":"initialize"}',
            '{"jsonrpc":"2.0","id":{},"method":"x"}',
            '{"jsonrpc":"2.0","id":true,"method":"x"}',
            '{"jsonrpc":"2.0","id":1}',
            '{"jsonrpc":"2.0","id":1,"method":5}',
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":3}',
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":"s"}',
            '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}',
            '"str"',
            "42",
            "null",
            "[1,2]",
        ),
    ),
    "nd-parse-errors": (
        0x63,
        nd('{"jsonrpc":', "{]", '{"a":1}}', "[1,]", "{'a':1}", "tru", "\x7f")
        + b"\xff\xfe\xc3\x28\n"
        + b'{"jsonrpc":"2.0","id":1,"method":"a\x00b"}\n',
    ),
    "nd-cancel": (
        0x1C,
        nd(
            note("$/cancelRequest", {"id": 1}),
            note("$/cancelRequest", {"id": "abc"}),
            note("$/cancelRequest", {"id": [1]}),
            note("$/cancelRequest", [1]),
            note("$/cancelRequest"),
            req("$/cancelRequest", id=9, params={"id": 9}),
        ),
    ),
    "nd-shutdown-exit": (
        0x24,
        nd(req("shutdown", id=1), req("initialize", id=2), req("shutdown", id=3), note("exit"), req("initialize", id=4)),
    ),
    "cl-exit-first": (0x2D, cl(note("exit"), req("initialize", id=1), req("stats", id=2))),
    "nd-unicode": (
        0x71,
        nd(
            req("initialize", id="\u00e9\u4e2d\U0001F600"),
            '{"jsonrpc":"2.0","id":"\\ud83d\\ude00\\u0000\\n","method":"m\\u00e9thode"}',
            '{"jsonrpc":"2.0","id":"\\ud800","method":"x"}',
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"k\\u0000":"\\udfff"}}',
        )
        + '{"jsonrpc":"2.0","id":"é😀","method":"ün"}\n'.encode(),
    ),
    "nd-deep-nesting": (
        0x46,
        # Deeper than jansson's 2048 limit (the line stays under the 4096-byte limit),
        # then a balanced 1000-deep value inside params.
        ("[" * 2100 + "\n").encode()
        + ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":' + "[" * 1000 + "]" * 1000 + "}}\n").encode(),
    ),
    "nd-int64-limits": (
        0x0A,
        nd(
            '{"jsonrpc":"2.0","id":9223372036854775807,"method":"x"}',
            '{"jsonrpc":"2.0","id":-9223372036854775808,"method":"x"}',
            '{"jsonrpc":"2.0","id":9223372036854775808,"method":"x"}',
            '{"jsonrpc":"2.0","id":-9223372036854775809,"method":"x"}',
            '{"jsonrpc":"2.0","id":1e308,"method":"x"}',
            '{"jsonrpc":"2.0","id":1e400,"method":"x"}',
            '{"jsonrpc":"2.0","id":-0,"method":"x"}',
            '{"jsonrpc":"2.0","id":-0.0,"method":"x"}',
            '{"jsonrpc":"2.0","id":5e-324,"method":"x"}',
        ),
    ),
    "nd-id-types": (
        0x17,
        nd(
            req("initialize", id=1),
            req("initialize", id="1"),
            req("initialize", id=1.5),
            req("initialize", id=None),
            '{"jsonrpc":"2.0","method":"initialize"}',
            '{"jsonrpc":"2.0","id":"","method":""}',
        ),
    ),
    "nd-stats": (0x2B, nd(req("stats"), req("stats", id=2, params={"x": 1}), req("stats", id=3, params=[]))),
    # No mutation: its outcome depends on how the input is cut (the backend answers
    # between chunks), which the whole-and-split oracle cannot allow.
    "nd-mutations": (
        0x3A,
        nd(
            req("subscribe", params={"topics": [{"type": "mutations"}]}),
            req("subscribe", id=2, params={"topics": [{"type": "mutations", "kind": "a"}]}),
            req("getMutations", id=3, params={"since": 0, "limit": 1}),
            req("getMutations", id=4, params={"id": "1"}),
            req("getMutations", id=5, params={"limit": 1001, "since": -1}),
        ),
    ),
    "nd-rpc-discover": (0x37, nd(req("rpc.discover"), req("rpc.discover", id=2, params={"a/b~c": 1}))),
    "nd-params": (
        0x3C,
        nd(
            req("initialize", params=[]),
            req("initialize", id=2, params=None),
            '{"jsonrpc":"2.0","id":3,"method":"initialize","params":null}',
            req("initialize", id=4, params=[1]),
            req("initialize", id=5, params={"x": 1}),
            req("shutdown", id=6, params={"a": 1}),
        ),
    ),
    "nd-whitespace-crlf": (
        0x03,
        b"\r\n \t\n" + req("initialize").encode() + b"\r\n\n\n  " + req("initialize", id=2).encode() + b"\r\n",
    ),
    "cl-whitespace-between": (0x19, b"\r\n\r\n  " + cl(req("initialize")) + b"\r\n\n" + cl(req("initialize", id=2))),
    "nd-then-content-length": (0x1D, nd(req("initialize"), "Content-Length: 2", "", "{}")),
    "nd-no-trailing-newline": (0x08, nd(req("initialize")) + req("initialize", id=2).encode()),
    # Every method of schema/openrpc.json with the params it takes, so the fuzzer
    # starts inside each handler rather than at its name (Tests check the list is whole).
    "nd-model-methods": (
        0x2E,
        nd(
            req("follow", params={"kind": "artist", "id": "banksy"}),
            req("getFollowState", id=2, params={"kind": "artist", "id": "banksy", "refresh": True, "maxAgeMs": 0}),
            req("setFollowState", id=3, params={"kind": "gene", "id": "brca1", "following": True, "await": True}),
            req("unfollow", id=4, params={"kind": "artist", "id": "banksy", "await": True}),
            req("getEntity", id=5, params={"kind": "artist", "id": "banksy", "refresh": True}),
            req("setInterfaceState", id=6, params={"items": [{"kind": "artist", "id": "kaws"}], "state": "visible"}),
            req("setInterfaceState", id=7, params={"items": [{"kind": "artist", "id": "kaws"}], "state": "none"}),
            req("fetchList", id=8, params={"list": "followedArtists", "params": {"page": 1}, "page": "next"}),
            req("subscribe", id=9, params={"topics": [{"type": "entity", "kind": "artist", "id": "banksy"}]}),
            req("unsubscribe", id=10, params={"subscription": "s1"}),
            req("inspect", id=11, params={"sections": ["entities", "holds"], "limit": 1}),
            req("configure", id=12, params={"environment": "default", "values": {"user": "me", "gone": None}}),
            req("sync", id=13, params={"timeoutMs": 0}),
        ),
    ),
    # The same methods given what a hostile or careless peer sends: ids equal only
    # under Unicode canonical equivalence, NUL and controls, wrong types, limits.
    "nd-model-hostile": (
        0x4D,
        nd(
            req("follow", params={"kind": "artist", "id": "caf\u00e9"}),
            req("getFollowState", id=2, params={"kind": "artist", "id": "cafe\u0301"}),
            req("getFollowState", id=3, params={"kind": "artist", "id": "a\u0000b", "maxAgeMs": -1}),
            req("getFollowState", id=4, params={"kind": "", "id": "x" * 300, "refresh": "yes"}),
            req("setFollowState", id=5, params={"kind": "gene", "id": 7, "following": None}),
            req("setInterfaceState", id=6, params={"items": [{"kind": "artist", "id": "1"}, 3], "state": "visible"}),
            req("setInterfaceState", id=7, params={"items": {"kind": "artist"}, "state": "hidden"}),
            req("fetchList", id=8, params={"list": "followedArtists", "params": {"p": {"nested": [1]}}}),
            req("fetchList", id=9, params={"list": "../x", "page": "last"}),
            req("unsubscribe", id=10, params={"subscription": 1}),
            req("inspect", id=11, params={"sections": ["nope"], "limit": 0}),
            req("configure", id=12, params={"authToken": "a\r\nX-Injected: 1"}),
            req("configure", id=13, params={"environment": "", "values": []}),
            req("sync", id=14, params={"timeoutMs": 600001}),
            req("getEntity", id=15, params=["artist", "banksy"]),
        ),
    ),
    "nd-duplicate-keys": (
        0x4A,
        nd('{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"initialize"}', '{"jsonrpc":"2.0","id":1,"id":"2","method":"initialize"}'),
    ),
}


# The focused targets (input formats in Fuzz/README.md). Files named crash-* or
# regression-* are findings kept by hand; they are never removed.
REPO = os.path.dirname(HERE)
OTHER = {
    "FuzzJSON": {
        "object": req("follow", params={"kind": "artist", "id": "1", "await": True}).encode(),
        "nested": b'{"a":[1,2.5e-3,{"b":null}],"c":"\\u00e9\\ud83d\\ude00","d":true}',
        "nul-quirk": b'[1\x00,true\x00]',
        "limits": b'[9223372036854775807,-9223372036854775808,1e308,"\\u0000"]',
        "duplicate-keys": b'{"a":1,"a":"x","\\u0061":2}',
    },
    "FuzzFrames": {
        "nd": b"\x1b\x07" + nd(req("initialize"), "", "  x", "\r"),
        "cl": b"\x3c\x09" + cl(req("initialize"), "{}") + b"Content-Length: 99999\r\n\r\n",
        "cl-bad": b"\x05\x01" + b"Content-Length: x\r\n\r\ncontent-length: 2\nX: y\n\n{}",
    },
    "FuzzRESTConfig": {
        # Every example configuration: together they use every construct of the format.
        **{
            api: open(os.path.join(REPO, "examples", api, "config.json"), "rb").read()
            for api in ("artsy", "github", "graphql", "mastodon", "youtube", "bluesky")
        },
        "by-position": b'{"environments":{"t":"http://h"},"kinds":{"a":{"follow":{"method":"PUT","path":"/f",'
        b'"query":{"ids":"{id}"},"capture":{"c":"/id"}},"unfollow":{"method":"DELETE","path":"/f/{c}"},'
        b'"state":{"method":"POST","path":"/s","json":{"ids":"{ids}"},"batch":{"join":"|","by":"position"}}}}}',
        "small": b'{"environments":{"t":"http://h"},"kinds":{"a":{"follow":{"method":"POST","path":"/f/{id}"},'
        b'"unfollow":{"method":"DELETE","path":"/f/{id}"},"state":{"method":"GET","path":"/s",'
        b'"query":{"ids":"{ids}"},"batch":{"maxIds":2,"windowMs":1,"items":"/x","id":"/id"}}}},'
        b'"lists":{"l":{"method":"GET","path":"/l/{p}","params":["p"],"paging":{"style":"cursor","next":"/n"},'
        b'"item":{"kind":"a","id":"/id"}}}}',
    },
    # Byte 0: the configuration (0 the target's own, then artsy, github, graphql,
    # mastodon, youtube, bluesky); byte 1: kind, endpoint, list; bytes 2-3: status (index into
    # the common ones: 0 = 200, 2 = 204, 7 = 403, 12 = 429); headers; NUL; body.
    "FuzzRESTAnswers": {
        "state-200": b"\x00\x02\x00\x00Content-Type: application/json\r\n\x00" + b'{"is_followed":true}',
        "batch": b"\x00\x0a\x00\x00\x00" + b'[{"artist":{"id":"1"}},{"artist":{"id":2}}]',
        "retry-after": b"\x00\x01\x00\x0cRetry-After: 30\r\n\x00" + b'{"error":"slow down"}',
        "link": b"\x00\x30\x00\x00Link: </api/v1/link?page=3>; rel=\"next last\", <x>; rel=prev\r\n\x00"
        + b'[{"id":"1","name":"Ai"},{"id":2,"name":"\\u00e9"}]',
        "page": b"\x00\x10\x00\x00\x00" + b'{"data":[{"id":"1","f":true,"c":"x"}],"next":"abc"}',
        "by-position": b"\x00\x09\x00\x00\x00[true,false,true]",
        "capture": b"\x00\x13\x00\x00\x00" + b'{"id":"t1"}',
        "artsy-batch": b"\x01\x09\x00\x00\x00" + b'[{"artist":{"id":"1"}}]',
        "github-reset": b"\x02\x00\x00\x07x-ratelimit-remaining: 0\r\nx-ratelimit-reset: 1764600300\r\n\x00"
        + b'{"message":"API rate limit exceeded"}',
        "github-retry-after": b"\x02\x04\x00\x07retry-after: 60\r\n\x00" + b'{"message":"secondary rate limit"}',
        "github-204": b"\x02\x09\x00\x02\x00",
        "graphql-errors": b"\x03\x00\x00\x00\x00"
        + b'{"data":null,"errors":[{"message":"Not found","extensions":{"httpStatusCodes":[404]}}]}',
        "graphql-502": b"\x03\x01\x00\x00\x00"
        + b'{"data":null,"errors":[{"message":"upstream","extensions":{"httpStatusCodes":[502]}}]}',
        "graphql-state": b"\x03\x08\x00\x00\x00" + b'{"data":{"artist":{"isFollowed":true}}}',
        "mastodon-requested": b"\x04\x00\x00\x00\x00" + b'{"id":"1","following":false,"requested":true}',
        "mastodon-batch": b"\x04\x08\x00\x00\x00"
        + b'[{"id":"1","following":true,"requested":false},{"id":"2","following":false,"requested":true},'
        + b'{"id":3,"following":false}]',
        "youtube-capture": b"\x05\x00\x00\x01\x00" + b'{"id":"sub1","snippet":{}}',
        "youtube-batch": b"\x05\x08\x00\x00\x00" + b'{"items":[{"id":"s1","snippet":{"resourceId":{"channelId":"1"}}}]}',
        "bluesky-capture": b"\x06\x00\x00\x00\x00" + b'{"uri":"at://did:plc:me/app.bsky.graph.follow/3kabc","cid":"c"}',
        "bluesky-capture-mismatch": b"\x06\x00\x00\x00\x00" + b'{"uri":"at://did:plc:me/app.bsky.feed.like/3kabc"}',
        "bluesky-batch": b"\x06\x08\x00\x00\x00"
        + b'{"profiles":[{"did":"1","viewer":{"following":"at://d/app.bsky.graph.follow/r1"}},{"did":"2","viewer":{}},'
        + b'{"did":"3","viewer":{"following":"at://d/app.bsky.graph.follow/"}}]}',
    },
    "FuzzStateFiles": {
        "outbox": b"\x01" + b'{"k":"artist","i":"1","e":"default","w":true}\n{"k":"gene","i":"2","w":null}\n{"k":"a","i":"3","w":false}\n{"k":',
        "journal": b"\x00" + b'{"k":"artist","i":"1","f":true}\n\n{"k":"gene","i":"x","f":false}\nbad\n{"k":"a","i":"b","f":true}',
        "snapshot": b"\x02" + b'{"version":1,"follows":{"artist":["1","2"],"gene":[]}}\n',
        "ledger": b"\x00" + b'{"next":9}\n{"q":7,"k":"artist","i":"1","w":true,"c":"nvim","e":"prod","a":1,"o":"pending"}\n'
        + b'{"q":7,"k":"artist","i":"1","w":true,"a":1,"o":"refused","t":2,"n":1,"x":"rejected","xs":422,"xm":"no"}\n'
        + b'{"q":8,"k":"gene","i":"2","w":false,"a":3,"o":"waiting","x":"unauthorized","xs":401,"xm":"sign in"}\n{"q":',
        "warm-states": b"\x00" + b'{"netmodel":"states","form":1,"environment":"the local backend"}\n'
        + b'{"kind":"artist","id":"banksy","following":true,"at":1700000000000}\n'
        + b'{"kind":"artist","id":"kaws","following":false,"requested":true,"at":1}\n',
    },
}


def write(directory, files):
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if not name.startswith(("crash-", "regression-")):
            os.remove(os.path.join(directory, name))
    for name, data in files.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} seeds to {directory}")


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
    write(os.path.join(corpus, "FuzzDispatch"), {name: bytes([selector]) + payload for name, (selector, payload) in SEEDS.items()})
    for target, files in OTHER.items():
        write(os.path.join(corpus, target), files)


if __name__ == "__main__":
    main()
