"""The JSON-RPC session under a client: requests and their replies on one
newline-delimited connection, and why a spawned server's output ended."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Callable, Dict, Optional, Set, Tuple

from ._params import _UNSET
from .errors import SERVER_SHUTTING_DOWN, ConnectionLost, RPCError

log = logging.getLogger("netmodel_client")

#: Largest line the reader accepts (the server's default message limit is 16 MiB).
LINE_LIMIT = 64 * 1024 * 1024


class _Session:
    """Sends requests and matches their replies; the layers above route notifications
    (``_dispatch``) and decide what a lost connection means (``_connection_lost``).
    ``AsyncClient.__init__`` sets every attribute."""

    _writer: Any
    process: Optional[asyncio.subprocess.Process]
    timeout: Optional[float]
    _next_id: int
    _pending: Dict[int, Tuple["asyncio.Future[Any]", Optional[Callable[[Any], Any]], str]]
    _abandoned: Set[int]
    instance: Optional[str]
    _closing: bool
    _answered: bool
    _stderr_tail: bytes
    _stderr_task: Optional["asyncio.Future[None]"]
    _lost: Optional[ConnectionError]
    _reader_task: "asyncio.Future[None]"

    def _dispatch(self, msg: Any) -> None:
        raise NotImplementedError

    def _connection_lost(self, error: Optional[BaseException]) -> None:
        raise NotImplementedError

    async def _request(
        self,
        method: str,
        params: Any,
        *,
        on_result: Optional[Callable[[Any], Any]] = None,
        timeout: Any = _UNSET,
        internal: bool = False,
    ) -> Any:
        """``internal``: the reconnect's own requests, sent while users still get ConnectionLost."""
        if timeout is _UNSET:
            timeout = self.timeout
        if not internal:
            self._check_open()
        self._next_id += 1
        rid = self._next_id
        msg: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        line = self._encode(msg)  # raises here, before anything is sent or awaited
        fut: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[rid] = (fut, on_result, method)
        try:
            await self._send_line(line, internal)
            if timeout is None:
                return await fut
            return await asyncio.wait_for(fut, timeout)
        except BaseException:
            # Cancelled or timed out while the server still works on it: tell it.
            if self._pending.pop(rid, None) is not None and self._lost is None:
                self._send_nowait({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": rid}})
                if method == "subscribe":
                    # Its answer may still come: that subscription is unsubscribed then.
                    self._abandoned.add(rid)
            raise

    def _check_open(self) -> None:
        if self._closing and self.process is None:
            raise ConnectionError("netmodel client is closed")
        if self._lost is not None:
            raise (ConnectionError if self._closing else ConnectionLost)(str(self._lost))

    @staticmethod
    def _encode(msg: Dict[str, Any]) -> bytes:
        """The message as one line of UTF-8 JSON. What the server could not parse is
        refused here: its error would carry ``id: null``, matching no request."""
        try:
            text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            return (text + "\n").encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate, e.g. from os.fsdecode
            bad = e.object[e.start : e.end] if isinstance(e.object, str) else ""
            raise ValueError(
                f"netmodel {msg.get('method')!r}: params hold a string that is not valid Unicode "
                f"(lone surrogate {bad!r}), which JSON cannot carry"
            ) from None
        except ValueError as e:  # NaN or infinity: not JSON
            raise ValueError(f"netmodel {msg.get('method')!r}: params are not JSON: {e}") from None

    async def _send(self, msg: Dict[str, Any], internal: bool = False) -> None:
        await self._send_line(self._encode(msg), internal)

    async def _send_line(self, line: bytes, internal: bool = False) -> None:
        if self._lost is not None and not internal:
            raise ConnectionLost(str(self._lost))
        try:
            self._writer.write(line)
            await self._writer.drain()
        except (OSError, RuntimeError) as e:
            raise ConnectionLost(f"netmodel connection lost while writing: {e}") from e

    def _send_nowait(self, msg: Dict[str, Any]) -> None:
        try:
            self._writer.write(self._encode(msg))
        except Exception:
            pass

    async def _copy_stderr(self, stream: asyncio.StreamReader) -> None:
        """The spawned server's stderr to ours, keeping the tail that explains an exit."""
        import sys

        while True:
            chunk = await stream.read(65536)
            if not chunk:
                return
            self._stderr_tail = (self._stderr_tail + chunk)[-2000:]
            try:
                sys.stderr.buffer.write(chunk)
                sys.stderr.buffer.flush()
            except (AttributeError, OSError, ValueError):  # a replaced or closed stderr
                pass

    async def _why_exited(self, error: Optional[BaseException]) -> Optional[BaseException]:
        """Why the spawned server's stdout ended: its exit code and last stderr lines,
        and whether it ever answered (a failed start says so)."""
        assert self.process is not None
        try:
            await asyncio.wait_for(self.process.wait(), 2.0)
            if self._stderr_task is not None:
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
        except (asyncio.TimeoutError, Exception):
            pass
        code = self.process.returncode
        tail = self._stderr_tail.decode("utf-8", "replace").strip()
        what = "exited" if self._answered else "never started"
        status = f"exit code {code}" if code is not None else "still running"
        why = RuntimeError(f"netmodel serve {what} ({status})" + (f": {tail}" if tail else ""))
        why.__cause__ = error
        return why

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        error: Optional[BaseException] = None
        cancelled = False
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    log.warning("netmodel sent a line that is not JSON: %.200r", line)
                    continue
                for m in msg if isinstance(msg, list) else [msg]:
                    self._dispatch(m)
        except asyncio.CancelledError:
            cancelled = True
            raise
        except Exception as e:
            error = e
        finally:
            if not cancelled and self.process is not None and not self._closing:
                error = await self._why_exited(error)
            self._connection_lost(error)
    def _dispatch_reply(self, msg: Dict[str, Any], rid: Any) -> None:
        if rid is None and isinstance(msg.get("error"), dict):
            self._fail_unmatched(msg["error"])
            return
        entry = self._pending.pop(rid, None)
        if entry is None:
            if rid in self._abandoned:
                self._abandoned.discard(rid)
                name = (msg.get("result") or {}).get("subscription") if isinstance(msg.get("result"), dict) else None
                if name is not None:  # subscribed after all, for nobody: end it
                    self._send_nowait(self._unsubscribe_message(name))
                return
            log.debug("netmodel reply to no pending request: %.200r", msg)
            return
        fut, on_result, method = entry
        if fut.done():
            return
        if "error" in msg:
            error = RPCError.from_json(msg["error"])
            if self._closing and error.code == SERVER_SHUTTING_DOWN and method != "shutdown":
                fut.set_exception(ConnectionError(f"netmodel client closed before {method!r} was answered"))
            else:
                fut.set_exception(error)
            return
        result = msg.get("result")
        if on_result is not None:
            try:
                result = on_result(result)
            except Exception as e:
                fut.set_exception(e)
                return
        fut.set_result(result)

    def _fail_unmatched(self, error: Dict[str, Any]) -> None:
        """An error with ``id: null`` (a line the server could not parse or read as a
        request) may belong to any request not answered yet: fail them all rather
        than leave one waiting for good."""
        pending, self._pending = self._pending, {}
        log.warning("netmodel answered a request it could not read: %.200r", error)
        for fut, _, _ in pending.values():
            if not fut.done():
                fut.set_exception(RPCError.from_json(error))

    def _saw_instance(self, result: Any) -> Optional[str]:
        instance = result.get("instance") if isinstance(result, dict) else None
        if isinstance(instance, str):
            self.instance = instance
            return instance
        return None

    def _unsubscribe_message(self, name: str) -> Dict[str, Any]:
        # An id of its own, answered to no one (logged at debug).
        self._next_id += 1
        return {"jsonrpc": "2.0", "id": self._next_id, "method": "unsubscribe", "params": {"subscription": name}}


async def _reap(proc: asyncio.subprocess.Process, timeout: float) -> None:
    try:
        await asyncio.wait_for(proc.wait(), timeout)
        return
    except asyncio.TimeoutError:
        log.warning("netmodel (pid %d) did not exit; sending SIGTERM", proc.pid)
    try:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 2.0)
        return
    except ProcessLookupError:
        return
    except asyncio.TimeoutError:
        log.warning("netmodel (pid %d) ignored SIGTERM; sending SIGKILL", proc.pid)
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    await proc.wait()
