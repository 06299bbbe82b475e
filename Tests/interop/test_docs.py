"""The docs hold true (docs/development.md, "Checked docs"): every relative link and anchor in
README.md, docs/, examples/*/README.md and clients/*/README.md resolves; every block marked
`sh runnable` runs as written against the real binary (and the demo servers it starts); the
byte counts the protocol's sessions show are the binary's."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCK_SECONDS = 60
READY_SECONDS = 20


def doc_files() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    files += sorted(REPO.glob("examples/*/README.md")) + [REPO / "examples" / "README.md"]
    files += sorted(REPO.glob("clients/*/README.md"))
    return [f for f in files if f.is_file()]


FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")


def prose_lines(text: str, blank_code: bool = True) -> list[tuple[int, str]]:
    """The lines outside fenced blocks, numbered from 1, inline code blanked out (unless not)."""
    out, fence = [], None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(2)[0] * 3
            elif m.group(2).startswith(fence) and not m.group(3).strip():
                fence = None
            continue
        if fence is None and not blank_code:
            out.append((n, line))
        elif fence is None:
            out.append((n, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda c: " " * len(c.group(0)), line)))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation but `-` and `_` dropped,
    each space a `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.replace("`", "").lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(path.read_text(), blank_code=False):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    # Explicit HTML anchors (<a id="…"> / name="…").
    out |= set(re.findall(r'<a\s+(?:id|name)="([^"]+)"', path.read_text()))
    return out


LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(path: Path) -> list[tuple[int, str]]:
    text = path.read_text()
    return [(n, m.group(1)) for n, line in prose_lines(text) for m in LINK.finditer(line)]


def broken_links() -> list[str]:
    bad = []
    for doc in doc_files():
        for n, target in links(doc):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            where = f"{doc.relative_to(REPO)}:{n}: {target}"
            file_part, _, anchor = target.partition("#")
            dest = (doc.parent / file_part).resolve() if file_part else doc
            if not dest.exists():
                bad.append(f"{where}: no such file")
                continue
            if not dest.is_relative_to(REPO):
                bad.append(f"{where}: outside the repository")
                continue
            if anchor:
                if dest.suffix != ".md" or dest.is_dir():
                    bad.append(f"{where}: an anchor into a file that is not Markdown")
                elif anchor not in anchors(dest):
                    bad.append(f"{where}: {dest.relative_to(REPO)} has no heading with anchor #{anchor}")
    return bad


def test_every_relative_link_and_anchor_resolves():
    assert broken_links() == []


def test_the_slugs_are_githubs():
    assert slug("Mutations: `follow`, `unfollow`, `setFollowState`") == "mutations-follow-unfollow-setfollowstate"
    assert slug("The server's figures: the stats topic") == "the-servers-figures-the-stats-topic"
    assert slug("As a user service (systemd)") == "as-a-user-service-systemd"
    assert slug("JSON-RPC, completely") == "json-rpc-completely"
    assert slug("snake_case stays") == "snake_case-stays"


def test_the_link_check_sees_a_broken_anchor_and_a_missing_file(tmp_path, monkeypatch):
    doc = tmp_path / "a.md"
    doc.write_text("# Here\n\n[ok](#here) [bad](#there) [gone](missing.md) `[code](#x)`\n```\n[fenced](#y)\n```\n")
    monkeypatch.setattr(__import__(__name__), "doc_files", lambda: [doc])
    monkeypatch.setattr(__import__(__name__), "REPO", tmp_path)
    assert broken_links() == ["a.md:3: #there: a.md has no heading with anchor #there", "a.md:3: missing.md: no such file"]


def test_the_layout_table_is_the_tree():
    """docs/development.md, Layout: every folder it names exists, and it names every top-level
    folder, every target folder under Sources/ and Fuzz/, and every script."""
    doc = (REPO / "docs" / "development.md").read_text()
    table = doc[doc.index("## Layout"):]
    table = table[: table.index("\n\n", table.index("| folder |"))]
    rows = [line for line in table.split("\n") if line.startswith("| `")]
    named = {p.rstrip("/") for row in rows for p in re.findall(r"`([^`]+)`", row.split(" | ")[0])}
    for path in named:
        assert (REPO / path).is_dir(), f"docs/development.md Layout names {path}, which is not a folder"
    top = {p.name for p in REPO.iterdir() if p.is_dir() and p.name not in {".git", ".build", ".venv", ".venv-system", ".pytest_cache", "build"}}
    top -= {n for n in top if n.startswith(".") and n != ".ci"}
    top_named = {n.split("/")[0] for n in named}
    assert top - top_named == set(), "top-level folders missing from Layout"
    sources = {f"Sources/{p.name}" for p in (REPO / "Sources").iterdir() if p.is_dir()}
    assert sources - named == set(), "Sources/ folders missing from Layout"
    scripts_row = next(row for row in rows if row.startswith("| `scripts/`"))
    listed = set(re.findall(r"`([a-z][a-z0-9_-]*)/?`", scripts_row.split(" | ", 1)[1]))  # not `--version`
    present = {p.name for p in (REPO / "scripts").iterdir()}
    assert present - listed == set(), "scripts missing from Layout's scripts/ row"
    assert listed - present == set(), "Layout's scripts/ row names scripts that do not exist"
    fuzz = {p.name for p in (REPO / "Fuzz").iterdir() if p.is_dir() and p.name.startswith("Fuzz") and p.name != "FuzzSupport"}
    words = {5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
    assert f"{words.get(len(fuzz), len(fuzz))} libFuzzer targets" in table, f"Fuzz/ has {len(fuzz)} targets"


# Runnable blocks ----------------------------------------------------------------------------


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence
    text: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def runnable_blocks() -> list[Block]:
    blocks = []
    for doc in doc_files():
        lines = doc.read_text().split("\n")
        i = 0
        while i < len(lines):
            m = FENCE.match(lines[i])
            if m and m.group(3).split()[:2] == ["sh", "runnable"]:
                start, body = i + 1, []
                i += 1
                while i < len(lines) and not FENCE.match(lines[i]):
                    body.append(lines[i])
                    i += 1
                blocks.append(Block(doc, start, "\n".join(body) + "\n"))
            elif m:  # skip any other fenced block whole
                i += 1
                while i < len(lines) and not FENCE.match(lines[i]):
                    i += 1
            i += 1
    return blocks


def ready_checks(line: str, runtime: Path) -> list[str]:
    """Bash lines that wait until what a background line starts listens."""
    waits = []
    if re.search(r"\bnetmodel serve\b", line):
        m = re.search(r"--socket=(\S+)", line)
        sock = m.group(1) if m else str(runtime / "netmodel" / "netmodel.sock")
        waits.append(f"__nm_wait_socket {sock}")
    m = re.search(r"\bserver\.py\b.*--port[ =](\d+)", line)
    if m and m.group(1) != "0":
        waits.append(f"__nm_wait_port {m.group(1)}")
    return waits


PRELUDE = f"""
__nm_wait_socket() {{
  for _ in $(seq {READY_SECONDS * 20}); do
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "runnable block: nothing listens on $1 after {READY_SECONDS} s" >&2; return 1
}}
__nm_wait_port() {{
  for _ in $(seq {READY_SECONDS * 20}); do
    python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "runnable block: nothing listens on port $1 after {READY_SECONDS} s" >&2; return 1
}}
set -e -o pipefail
"""


def script_of(block: Block, runtime: Path) -> str:
    """The block as a bash script; a failing command names its line in the doc (bash's ERR trap,
    the script's line numbers mapped back)."""
    doc = block.name.split(":")[0]
    body, where = [], []
    for n, line in enumerate(block.text.split("\n"), block.line + 1):
        where.append((len(body) + 1, n))
        body.append(line)
        code = re.sub(r"\s+#.*$", "", line).rstrip()
        if code.endswith("&") and not code.endswith("&&"):
            for check in ready_checks(code, runtime):  # a server that never listens: its line
                where.append((len(body) + 1, n))
                body.append(check)
    offset = PRELUDE.count("\n") + 2  # the prelude, then the two lines below
    cases = " ".join(f"{offset + i}) echo {n};;" for i, n in where)
    header = (PRELUDE + "__nm_line() { case $1 in " + cases + " *) echo ?;; esac; }\n"
              f"trap 'echo \"runnable block: exit $? at {doc}:$(__nm_line $LINENO)\" >&2' ERR\n")
    assert header.count("\n") == offset
    return header + "\n".join(body) + "\n"


def ports_in(block: Block) -> list[int]:
    return [int(p) for p in re.findall(r"server\.py\b.*--port[ =](\d+)", block.text) if p != "0"]


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def run_block(block: Block, binary: str) -> subprocess.CompletedProcess[str]:
    tmp = Path(tempfile.mkdtemp(prefix="nmd-", dir="/tmp"))  # short: a socket path fits in 108 bytes
    try:
        return run_block_in(block, binary, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_block_in(block: Block, binary: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    home, runtime, bindir = tmp / "home", tmp / "run", tmp / "bin"
    for d in (home, runtime, bindir):
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    (bindir / "netmodel").symlink_to(binary)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NETMODEL_", "XDG_", "LISTEN_"))}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime), XDG_STATE_HOME=str(home / "state"),
               PATH=f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}", NO_COLOR="1")
    for k in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env.pop(k, None)
    # A demo server's documented port may be held a moment by another test on this machine.
    deadline = time.monotonic() + 30
    while not all(port_free(p) for p in ports_in(block)) and time.monotonic() < deadline:
        time.sleep(0.2)
    script = tmp / "block.sh"
    script.write_text(script_of(block, runtime))
    # Files, not pipes: a server the block leaves running would hold a pipe open.
    with open(tmp / "out", "w+") as out_f, open(tmp / "err", "w+") as err_f:
        proc = subprocess.Popen(["bash", str(script)], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                                stdout=out_f, stderr=err_f, text=True, start_new_session=True)
        note = ""
        try:
            proc.wait(timeout=BLOCK_SECONDS)
        except subprocess.TimeoutExpired:
            note = f"\n(killed after {BLOCK_SECONDS} s)"
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the block, and what it left running
            except ProcessLookupError:
                pass
            proc.wait()
        returncode = -9 if note else proc.returncode
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read(), err_f.read() + note
    return subprocess.CompletedProcess(proc.args, returncode, out, err)


BLOCKS = runnable_blocks()


def test_there_are_runnable_blocks_where_the_docs_promise_them():
    names = {b.path.relative_to(REPO).as_posix() for b in BLOCKS}
    assert "README.md" in names
    for ex in ("artsy", "github", "mastodon", "youtube", "graphql"):
        assert f"examples/{ex}/README.md" in names, f"examples/{ex}/README.md has no runnable Run it block"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.name)
def test_runnable_block_runs(block, binary, tmp_path):
    result = run_block(block, binary)
    assert result.returncode == 0, (
        f"{block.name}: the runnable block failed (exit {result.returncode})\n"
        f"--- block\n{block.text}--- stdout\n{result.stdout}--- stderr\n{result.stderr}")


def test_a_failing_block_is_named_by_file_and_line(binary, tmp_path):
    block = Block(REPO / "README.md", 7, "netmodel serve --socket --no-stdio &\nnetmodel call nosuchmethod\n")
    result = run_block(block, binary)
    assert result.returncode != 0
    assert "runnable block: exit 1 at README.md:9" in result.stderr, result.stderr


def test_a_block_that_leaves_a_server_running_leaves_nothing(binary, tmp_path):
    block = Block(REPO / "README.md", 1, f"netmodel serve --socket --no-stdio &\necho $! > {tmp_path}/pid\n")
    assert run_block(block, binary).returncode == 0
    pid = int((tmp_path / "pid").read_text())
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the block's server outlived it")


# Bytes the protocol's sessions show ---------------------------------------------------------


def test_the_stdio_sessions_content_length_is_the_binarys(binary, tmp_path):
    doc = (REPO / "docs" / "protocol.md").read_text()
    m = re.search(r"\$ printf '(Content-Length: \d+\\r\\n\\r\\n(\{.*?\}))' \| netmodel serve.*?\n"
                  r"Content-Length: (\d+)\n\n(\{.*?\})\n", doc, re.S)
    assert m, "docs/protocol.md: the Content-Length session over stdio is not where the test looks"
    request, shown_length, shown_reply = m.group(2), int(m.group(3)), m.group(4)
    assert f"Content-Length: {len(request.encode())}\\r" in m.group(1), "the request's own Content-Length"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    wire = f"Content-Length: {len(request.encode())}\r\n\r\n{request}".encode()
    out = subprocess.run([binary, "serve"], input=wire, capture_output=True, timeout=30, env=env).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    sent = int(head.decode().removeprefix("Content-Length: "))
    assert sent == len(body)
    assert shown_length == sent, f"docs/protocol.md shows Content-Length {shown_length}; the binary sends {sent}"
    # The reply shown is the binary's, but for the instance id, random per start.
    strip = lambda s: re.sub(r'"instance":"[0-9a-f]+"', '"instance":""', s)  # noqa: E731
    assert strip(shown_reply) == strip(body.decode())
    assert len(shown_reply.encode()) == sent


def test_the_socat_sessions_reply_shows_only_what_the_binary_sends(binary, tmp_path):
    doc = (REPO / "docs" / "protocol.md").read_text()
    m = re.search(r"\$ echo '(\{[^']*\"method\":\"stats\"\})' \| socat [^\n]*\n(\{.*?\})\n", doc)
    assert m, "docs/protocol.md: the socat stats session is not where the test looks"
    request, shown = m.group(1), json.loads(m.group(2))
    run = Path(tempfile.mkdtemp(prefix="nmd-", dir="/tmp"))
    try:
        env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_RUNTIME_DIR": str(run)}
        server = subprocess.Popen([binary, "serve", "--socket", "--no-stdio"], env=env, stderr=subprocess.DEVNULL)
        try:
            sock = run / "netmodel" / "netmodel.sock"
            for _ in range(400):
                if sock.exists():
                    break
                time.sleep(0.05)
            out = subprocess.run(["socat", "-", f"UNIX-CONNECT:{sock}"], input=request + "\n", text=True,
                                 capture_output=True, timeout=30, env=env).stdout
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(run, ignore_errors=True)
    sent = json.loads(out)

    def shape(v):
        if isinstance(v, dict):
            return {k: shape(x) for k, x in v.items() if k != "byCode" and k != "byMethod"}
        if isinstance(v, list):
            return [shape(x) for x in v]
        return type(v).__name__

    assert shape(shown) == shape(sent), "docs/protocol.md: the socat session's stats are not the binary's shape"
    assert shown["result"]["bytes"]["in"] == sent["result"]["bytes"]["in"] == len(request.encode()) + 1  # and its newline


def test_the_socat_follow_session_is_what_the_binary_answers(binary, tmp_path):
    """docs/protocol.md, "Following an artist with socat": its command, run as shown, answers
    the lines shown (but the random instance id)."""
    doc = (REPO / "docs" / "protocol.md").read_text()
    section = doc[doc.index("## Following an artist with socat"):]
    block = section[section.index("```console\n") + 11: section.index("\n```", section.index("```console\n"))]
    lines = block.split("\n")
    assert lines[0] == "$ netmodel serve --socket --no-stdio &"
    command = "\n".join(line.removeprefix("$ ") for line in lines[1:] if not line.startswith("{"))
    shown = [line for line in lines if line.startswith("{")]
    run = Path(tempfile.mkdtemp(prefix="nmd-", dir="/tmp"))
    try:
        env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_RUNTIME_DIR": str(run)}
        server = subprocess.Popen([binary, "serve", "--socket", "--no-stdio"], env=env, stderr=subprocess.DEVNULL)
        try:
            sock = run / "netmodel" / "netmodel.sock"
            for _ in range(400):
                if sock.exists():
                    break
                time.sleep(0.05)
            out = subprocess.run(["bash", "-c", command], text=True, capture_output=True, timeout=30, env=env).stdout
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(run, ignore_errors=True)
    strip = lambda s: re.sub(r'"instance":"[0-9a-f]+"', '"instance":""', s)  # noqa: E731
    assert [strip(line) for line in out.splitlines()] == [strip(line) for line in shown]


@pytest.fixture(scope="module")
def binary(netmodel_bin: Path) -> str:
    return str(netmodel_bin.resolve())


def test_tools_the_blocks_use_exist():
    for tool in ("bash", "python3", "curl"):
        assert shutil.which(tool), tool
