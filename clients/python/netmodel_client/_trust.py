"""Who a socket client agrees to talk to. Whoever can put a socket where the client
looks receives what it sends, tokens included (``configure``), so before sending
anything the client checks that the socket's folder is the user's alone and, where
the platform tells (Linux: ``SO_PEERCRED``), that the process listening runs as the
same user. The server applies the same rules to the folder it listens in."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import struct
from typing import Any, Optional, Tuple

from .errors import UntrustedSocket


def _writers(mode: int) -> Optional[str]:
    group, others = bool(mode & stat.S_IWGRP), bool(mode & stat.S_IWOTH)
    if group and others:
        return "its group and other users"
    return "its group" if group else "other users" if others else None


def check_socket_folder(path: str) -> None:
    """Raise :class:`UntrustedSocket` unless ``path``'s folder is a real folder (not a
    symbolic link) owned by this user that neither its group nor others can write. A
    missing folder passes: connecting then fails as usual."""
    folder = os.path.dirname(path) or "."
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return
    me = os.geteuid()
    refuse = f"refusing to connect to {path}: its folder {folder}"
    if stat.S_ISLNK(st.st_mode):
        raise UntrustedSocket(f"{refuse} is a symbolic link; give the real path")
    if st.st_uid != me:
        raise UntrustedSocket(
            f"{refuse} belongs to uid {st.st_uid}, not to this user (uid {me}), who could have put any server there"
        )
    writers = _writers(st.st_mode)
    if writers:
        raise UntrustedSocket(
            f"{refuse} can be written by {writers} (mode {stat.S_IMODE(st.st_mode):04o}), "
            f"who could have put any server there; run `chmod 700 {folder}`"
        )


def check_peer(sock: Any, path: str) -> None:
    """Raise :class:`UntrustedSocket` when the process at the other end of ``sock``
    runs as another user. Where there is no ``SO_PEERCRED`` the folder check stands alone."""
    if not hasattr(socket, "SO_PEERCRED") or sock is None:
        return
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    me = os.geteuid()
    if uid != me:
        raise UntrustedSocket(
            f"refusing to talk to {path}: the process listening there runs as uid {uid}, "
            f"not as this user (uid {me}); nothing was sent"
        )


async def open_checked(path: str, limit: int) -> Tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """``asyncio.open_unix_connection`` with both checks, before a byte is sent."""
    check_socket_folder(path)
    reader, writer = await asyncio.open_unix_connection(path, limit=limit)
    try:
        check_peer(writer.get_extra_info("socket"), path)
    except BaseException:
        writer.close()
        raise
    return reader, writer
