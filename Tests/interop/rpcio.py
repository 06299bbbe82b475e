"""Byte-level JSON-RPC plumbing for the interop tests, and the asyncio session of
scripts/soak (``AsyncSession``).

Everything here is bounded in time: a reader thread collects the bytes a peer
sends, and every wait on it takes a timeout.  Frames the server sends are parsed
*strictly* (a stray byte on stdout, a wrong Content-Length or a missing
``"jsonrpc":"2.0"`` fails the test), because the real clients are strict in
their own ways (see test_clients.py).

Standard library only but for pytest, imported where a test fails or skips, so
scripts/soak (standard-library Python) shares this module.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

DEFAULT_TIMEOUT = 10.0
SOCKET_WAIT = 10.0  # seconds to wait for a server's socket to appear

# Sentinel for "leave the member out of the message".
ABSENT = object()

LSP = "lsp"
NDJSON = "ndjson"
FRAMINGS = (LSP, NDJSON)

_HEADER_LINE = re.compile(rb"^([A-Za-z][A-Za-z0-9-]*): (.*)$")


class ProtocolViolation(AssertionError):
    """The server sent bytes that are not a well-formed frame."""


def encode(obj: Any) -> bytes:
    """Compact JSON, UTF-8, non-ASCII kept as is (as jq/socat users send it)."""
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj)
    if isinstance(obj, str):
        return obj.encode("utf-8")
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def frame(body: Any, framing: str) -> bytes:
    """Wrap one message body (object, str or bytes) in the given framing."""
    data = encode(body)
    if framing == LSP:
        return b"Content-Length: %d\r\n\r\n" % len(data) + data
    if framing == NDJSON:
        assert b"\n" not in data, "an NDJSON message must not contain a newline"
        return data + b"\n"
    raise ValueError(framing)


@dataclass
class Frame:
    raw: bytes  # the complete frame as it came off the wire
    body: bytes
    headers: list = field(default_factory=list)  # [(name, value)] for LSP, in order
    obj: Any = None


def parse_frame(buf: bytes, framing: str) -> Optional[tuple[Frame, int]]:
    """Parse one frame from the start of ``buf``.

    Returns (frame, bytes consumed), or None if ``buf`` holds only part of a
    frame.  Raises ProtocolViolation for bytes that can never become a frame.
    """
    if framing == LSP:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            # Not even the start of a header (or an endless one): garbage on the wire.
            if buf and (not bytes(buf[:1]).isalpha() or len(buf) > 4096):
                raise ProtocolViolation(f"expected an LSP header, got {bytes(buf[:200])!r}")
            return None
        head = bytes(buf[:end])
        headers = []
        for line in head.split(b"\r\n"):
            m = _HEADER_LINE.match(line)
            if not m:
                raise ProtocolViolation(f"malformed header line {line!r} in {head!r}")
            headers.append((m.group(1).decode("ascii"), m.group(2).decode("latin-1")))
        lengths = [v for k, v in headers if k.lower() == "content-length"]
        if len(lengths) != 1 or not lengths[0].strip().isdigit():
            raise ProtocolViolation(f"need exactly one numeric Content-Length header, got {head!r}")
        n = int(lengths[0])
        start = end + 4
        if len(buf) < start + n:
            return None
        body = bytes(buf[start : start + n])
        try:
            obj = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ProtocolViolation(
                f"Content-Length {n} does not frame one JSON document: {body[:300]!r} "
                f"(next bytes {bytes(buf[start + n : start + n + 40])!r}): {e}"
            ) from None
        return Frame(bytes(buf[: start + n]), body, headers, obj), start + n
    if framing == NDJSON:
        nl = buf.find(b"\n")
        if nl < 0:
            return None
        body = bytes(buf[:nl])
        try:
            obj = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ProtocolViolation(f"NDJSON line is not one JSON document: {body[:300]!r}: {e}") from None
        return Frame(bytes(buf[: nl + 1]), body, [], obj), nl + 1
    raise ValueError(framing)


def parse_all(data: bytes, framing: str) -> list[Frame]:
    """Parse a complete byte string into frames; leftovers are a violation."""
    frames = []
    pos = 0
    while pos < len(data):
        got = parse_frame(data[pos:], framing)
        if got is None:
            raise ProtocolViolation(f"trailing partial frame: {data[pos:pos + 300]!r}")
        f, n = got
        frames.append(f)
        pos += n
    return frames


def check_response(obj: Any) -> None:
    """Shape checks every client relies on (pylsp_jsonrpc drops messages
    without "jsonrpc":"2.0"; a response has exactly one of result/error)."""
    if isinstance(obj, list):
        if not obj:
            raise ProtocolViolation("server sent an empty batch response []")
        for o in obj:
            check_response(o)
        return
    if not isinstance(obj, dict):
        raise ProtocolViolation(f"message is not an object: {obj!r}")
    if obj.get("jsonrpc") != "2.0":
        raise ProtocolViolation(f'message lacks "jsonrpc":"2.0": {obj!r}')
    if "method" in obj:  # a server notification (stateChanged, ...)
        return
    if "id" not in obj:
        raise ProtocolViolation(f"response without id: {obj!r}")
    if ("result" in obj) == ("error" in obj):
        raise ProtocolViolation(f"response must have exactly one of result/error: {obj!r}")
    if "error" in obj:
        err = obj["error"]
        if not (isinstance(err, dict) and isinstance(err.get("code"), int) and not isinstance(err.get("code"), bool)
                and isinstance(err.get("message"), str)):
            raise ProtocolViolation(f"malformed error object: {obj!r}")


class ByteReader:
    """Collects everything a peer sends, on a daemon thread."""

    def __init__(self, read: Callable[[int], bytes], name: str):
        self._read = read
        self._buf = bytearray()  # not yet consumed by a parser
        self.all = bytearray()  # everything ever received
        self.eof = False
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"reader-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                chunk = self._read(65536)
            except (OSError, ValueError):
                chunk = b""
            with self._cv:
                if not chunk:
                    self.eof = True
                    self._cv.notify_all()
                    return
                self._buf += chunk
                self.all += chunk
                self._cv.notify_all()

    def take_frame(self, framing: str, timeout: float) -> Optional[Frame]:
        """Next frame, or None on timeout/EOF."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                got = parse_frame(self._buf, framing) if self._buf else None
                if got is not None:
                    f, n = got
                    del self._buf[:n]
                    return f
                remaining = deadline - time.monotonic()
                if self.eof or remaining <= 0:
                    return None
                self._cv.wait(remaining)

    def wait_eof(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cv:
            while not self.eof:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cv.wait(remaining)
            return True

    def pending(self) -> bytes:
        with self._cv:
            return bytes(self._buf)


class Conn:
    """One JSON-RPC connection to the server (its stdio or a socket)."""

    def __init__(self, read, write, framing: str, name: str, diag: Callable[[], str] = lambda: ""):
        self._write = write
        self.framing = framing
        self.name = name
        self.reader = ByteReader(read, name)
        self.diag = diag
        self._ids = itertools.count(1)
        self.stash: collections.deque = collections.deque()

    # -- sending ---------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        self._write(data)

    def send(self, body: Any, framing: Optional[str] = None) -> None:
        self.send_raw(frame(body, framing or self.framing))

    def request_obj(self, method: Any, params: Any = ABSENT, id: Any = ABSENT) -> dict:
        msg = {"jsonrpc": "2.0"}
        msg["id"] = next(self._ids) if id is ABSENT else id
        msg["method"] = method
        if params is not ABSENT:
            msg["params"] = params
        return msg

    def notify(self, method: str, params: Any = ABSENT) -> None:
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not ABSENT:
            msg["params"] = params
        self.send(msg)

    # -- receiving -------------------------------------------------------
    def recv_frame(self, timeout: float = DEFAULT_TIMEOUT, what: str = "a message") -> Frame:
        if self.stash:
            return self.stash.popleft()
        return self._take(timeout, what)

    def _take(self, timeout: float, what: str) -> Frame:
        f = self.reader.take_frame(self.framing, timeout)
        if f is None:
            state = "closed the connection" if self.reader.eof else f"sent nothing for {timeout}s"
            raise AssertionError(
                f"[{self.name}] waiting for {what}: server {state}; "
                f"unparsed bytes {self.reader.pending()[:300]!r}\n{self.diag()}"
            )
        check_response(f.obj)
        return f

    def recv(self, timeout: float = DEFAULT_TIMEOUT, what: str = "a message") -> Any:
        return self.recv_frame(timeout, what).obj

    def recv_reply(self, timeout: float = DEFAULT_TIMEOUT, what: str = "a reply") -> Any:
        """Next reply; server notifications (stateChanged...) met on the way are kept
        for `recv`, since the server writes a turn's state changes before its replies."""
        while True:
            f = self._take(timeout, what)
            obj = f.obj
            if isinstance(obj, dict) and "method" in obj and "id" not in obj:
                self.stash.append(f)
                continue
            return obj

    def call(self, method: Any, params: Any = ABSENT, id: Any = ABSENT, timeout: float = DEFAULT_TIMEOUT) -> dict:
        msg = self.request_obj(method, params, id)
        self.send(msg)
        reply = self.recv_reply(timeout, what=f"the reply to {encode(msg)[:200]!r}")
        assert isinstance(reply, dict), f"expected one response object, got {reply!r}"
        assert reply["id"] == msg["id"] and type(reply["id"]) is type(msg["id"]), (
            f"reply id {reply['id']!r} does not echo request id {msg['id']!r}: {reply!r}"
        )
        return reply

    def result(self, method: Any, params: Any = ABSENT, **kw) -> Any:
        reply = self.call(method, params, **kw)
        assert "error" not in reply, f"{method} failed: {reply!r}"
        return reply["result"]

    def assert_quiet(self, seconds: float = 0.3) -> None:
        f = self.stash.popleft() if self.stash else self.reader.take_frame(self.framing, seconds)
        assert f is None, f"[{self.name}] expected no message, got {f.raw!r}"


def notes_until(conn: "Conn", done: Callable[[dict], Any], timeout: float = 10.0) -> list:
    """The states of `stateChanged` notifications until `done(state)`; all of them."""
    deadline, seen = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        message = conn.recv(timeout=max(0.05, deadline - time.monotonic()))
        if message.get("method") == "stateChanged":
            seen.append(message["params"]["state"])
            if done(message["params"]["state"]):
                return seen
    raise AssertionError(f"not seen in {timeout}s; last {seen[-3:]}")


def stderr_tail(path: Path, limit: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return "(no stderr file)"
    text = data[-limit:].decode("utf-8", "replace")
    return f"--- server stderr (last {limit} bytes) ---\n{text}\n--- end stderr ---"


class ServerProc:
    """A running ``netmodel serve`` with its stdio as a Conn."""

    def __init__(self, argv: list, env: dict, stderr_path: Path, framing: str = NDJSON, stdio: bool = True,
                 cwd: Optional[Path] = None):
        self.argv = argv
        self.stderr_path = stderr_path
        self._stderr_file = open(stderr_path, "wb")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr_file,
            env=env,
            cwd=cwd,
            start_new_session=True,  # a ^C in the terminal does not reach it; we signal it ourselves
        )
        self.pid = self.proc.pid
        out_fd = self.proc.stdout.fileno()

        def write(data: bytes) -> None:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

        self.conn = Conn(lambda n: os.read(out_fd, n), write, framing, f"stdio:{self.pid}", self.diagnostics)

    def diagnostics(self) -> str:
        rc = self.proc.poll()
        state = "running" if rc is None else f"exited with {rc}"
        return f"server pid {self.pid} {state}; argv {self.argv}\n{stderr_tail(self.stderr_path)}"

    def stderr(self) -> str:
        self._stderr_file.flush()
        return self.stderr_path.read_bytes().decode("utf-8", "replace")

    def close_stdin(self) -> None:
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"server did not exit within {timeout}s\n{self.diagnostics()}") from None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """Teardown: never leave the process behind. Ends only our own pid."""
        if self.proc.stdin:
            self.close_stdin()
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                try:
                    self.proc.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    pass
            except ProcessLookupError:
                pass
        try:
            self.proc.stdout.close()
        except OSError:
            pass
        self._stderr_file.close()


def socket_conn(path: str, framing: str, diag: Callable[[], str] = lambda: "", timeout: float = 5.0) -> tuple[Conn, socket.socket]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(str(path))
    s.settimeout(None)
    conn = Conn(s.recv, s.sendall, framing, f"sock:{os.path.basename(str(path))}", diag)
    conn.sock = s
    return conn, s


def close_socket(s: socket.socket) -> None:
    """Really hang up.  A bare close() does not: the reader thread blocked in
    recv() keeps the socket alive on Linux, so no FIN goes out.  shutdown()
    sends it and wakes the reader."""
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()


def wait_for(pred: Callable[[], Any], timeout: float, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def require_tool(name: str, install_hint: str) -> str:
    """A real client this suite needs.  Missing → fail (the protocol promises
    these clients work), unless NETMODEL_INTEROP_SKIP_MISSING_CLIENTS=1."""
    found = shutil.which(name)
    if found:
        return found
    msg = f"`{name}` is not installed; the interop tests need it ({install_hint})"
    import pytest

    if os.environ.get("NETMODEL_INTEROP_SKIP_MISSING_CLIENTS") == "1":
        pytest.skip(msg)
    pytest.fail(msg, pytrace=False)


def wait_for_socket(server: "ServerProc", path: Path, timeout: float = SOCKET_WAIT) -> None:
    """Bounded wait until `path` is a socket that accepts connections."""
    import pytest

    deadline = time.monotonic() + timeout
    last = "socket file never appeared"
    while time.monotonic() < deadline:
        if not server.alive():
            pytest.fail(
                f"server exited with {server.proc.returncode} before listening on {path}\n{server.diagnostics()}",
                pytrace=False,
            )
        try:
            if stat.S_ISSOCK(os.stat(path).st_mode):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.settimeout(1.0)
                    s.connect(str(path))
                    return
                except OSError as e:
                    last = f"connect failed: {e}"
                finally:
                    s.close()
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    pytest.fail(f"server did not listen on {path} within {timeout}s ({last})\n{server.diagnostics()}", pytrace=False)


class RPCError(Exception):
    """An error reply: its error object's ``code``, ``message`` and ``data``."""

    def __init__(self, error: dict):
        super().__init__(error.get("message"))
        self.code, self.data = error.get("code"), error.get("data")


class ConnectionLost(Exception):
    """The connection ended before the reply came."""


class AsyncSession:
    """One newline-delimited JSON-RPC connection on asyncio streams, for a driver that
    keeps many connections busy at once (scripts/soak): requests matched to their
    replies by id, every message held to ``check_response`` as ``Conn`` does, server
    notifications handed to ``notified``, anything else to ``unexpected``. Waits are
    bounded by the caller's timeouts."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, name: str = "session"):
        self.reader, self.writer, self.name = reader, writer, name
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future] = {}
        self.closed = False
        self.reader_task = asyncio.get_running_loop().create_task(self.read_loop())

    def notified(self, method: str, params: Any, line: bytes) -> None:
        """A server notification (a message with a method and no id)."""

    def unexpected(self, why: str) -> None:
        """A line that is not JSON, not a well-formed message, or neither a reply nor a
        notification."""

    async def read_loop(self) -> None:
        try:
            while True:
                line = await self.reader.readline()
                if not line:
                    break
                msg = json.loads(line)
                check_response(msg)
                if isinstance(msg, dict) and msg.get("id") is not None and "method" not in msg:
                    fut = self.waiting.pop(msg["id"], None)
                    if fut is not None and not fut.done():
                        fut.set_result(msg)
                elif isinstance(msg, dict) and "method" in msg and "id" not in msg:
                    self.notified(msg["method"], msg.get("params"), line)
                else:
                    self.unexpected(f"unexpected message {line[:200]!r}")
        except (ConnectionError, OSError):
            pass
        except (ValueError, ProtocolViolation) as err:
            self.unexpected(f"unreadable line: {err}")
        finally:
            self.closed = True
            for fut in self.waiting.values():
                if not fut.done():
                    fut.set_exception(ConnectionLost())
            self.waiting.clear()

    async def request(self, method: str, params: Any = None, timeout: Optional[float] = None) -> Any:
        """The reply's result; an error reply raises RPCError, a connection that ends
        first ConnectionLost (the request may or may not have been handled)."""
        if self.closed:
            raise ConnectionLost()
        self.next_id += 1
        rid = self.next_id
        fut = asyncio.get_running_loop().create_future()
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())  # a lost reply is no error here
        self.waiting[rid] = fut
        msg: dict = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        try:
            self.writer.write(frame(msg, NDJSON))
            await self.writer.drain()
        except (ConnectionError, OSError):
            self.waiting.pop(rid, None)
            raise ConnectionLost()
        reply = await (asyncio.wait_for(fut, timeout) if timeout else fut)
        if "error" in reply:
            raise RPCError(reply["error"])
        return reply["result"]

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:
            pass
