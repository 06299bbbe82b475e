"""Socket activation: the real binary given a listening socket as fd 3 with
LISTEN_FDS/LISTEN_PID, as systemd passes it (sd_listen_fds(3),
https://www.freedesktop.org/software/systemd/man/latest/sd_listen_fds.html),
and the user units in contrib/systemd."""

from __future__ import annotations

import configparser
import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

import rpcio

pytestmark = pytest.mark.timeout(60)

STEP = 30
REPO = Path(__file__).resolve().parents[2]

# Puts the socket at fd 3 and sets LISTEN_PID to the pid the binary will have:
# `exec` keeps the shell's pid, as systemd's fork does for the service.
WRAPPER = 'exec 3<&"$NM_FD" {NM_FD}<&-; LISTEN_PID=$$ exec "$0" "$@"'


def listening(path: Path, kind=socket.SOCK_STREAM, listen=True) -> socket.socket:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    s = socket.socket(socket.AF_UNIX, kind)
    s.bind(str(path))
    if listen:
        s.listen(16)
    return s


class Activated:
    """`netmodel serve ARGS` started with `fd` as its fd 3, as a service manager would."""

    def __init__(self, netmodel_bin, runtime, fd: int, *args, env: dict | None = None, listen_pid: str | None = None):
        e = dict(runtime.env, LISTEN_FDS="1", NM_FD=str(fd))
        e.update(env or {})
        script = WRAPPER if listen_pid is None else WRAPPER.replace("LISTEN_PID=$$", f"LISTEN_PID={listen_pid}")
        self.stderr_path = runtime.logs / f"activated-{fd}.stderr"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                ["bash", "-c", script, str(netmodel_bin), "serve", *args],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=e, pass_fds=(fd,),
                start_new_session=True,
            )

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait(self) -> int:
        try:
            return self.proc.wait(timeout=STEP)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"server did not exit\n{self.stderr()}") from None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait()


@pytest.fixture
def activate(netmodel_bin, runtime):
    started: list[Activated] = []

    def _activate(fd, *args, **kw):
        started.append(Activated(netmodel_bin, runtime, fd, *args, **kw))
        return started[-1]

    yield _activate
    for a in started:
        if a.proc.poll() is None:
            a.proc.kill()
            a.proc.wait(timeout=5)


def call(netmodel_bin, runtime, *args):
    return subprocess.run(
        [str(netmodel_bin), "call", *args], env=runtime.env, capture_output=True, text=True, timeout=STEP
    )


def test_the_passed_socket_is_served_and_left_to_the_manager(netmodel_bin, runtime, activate):
    # Where the unit's ListenStream=%t/netmodel/netmodel.sock puts it: the clients' default.
    path = runtime.default_socket
    sock = listening(path)
    server = activate(sock.fileno(), "--socket", "--no-stdio", "--state-dir", str(runtime.state / "nm"))

    # `netmodel call` finds it without --socket. Had the server bound the path itself, it
    # would have found our listener answering there and refused to start.
    done = call(netmodel_bin, runtime, "follow", "kind=artist", "id=banksy", "await:=true")
    assert done.returncode == 0, done.stderr + server.stderr()
    assert json.loads(done.stdout)["following"] is True

    # Its exec-s do not inherit the socket (sd_listen_fds sets FD_CLOEXEC).
    flags = next(line for line in Path(f"/proc/{server.proc.pid}/fdinfo/3").read_text().splitlines()
                 if line.startswith("flags:"))
    assert int(flags.split()[1], 8) & os.O_CLOEXEC

    assert server.stop() == 0, server.stderr()
    # The path is the manager's: still there, still listening (ours), so a client that
    # connects while no server runs waits in the backlog for the next activation.
    assert path.is_socket()
    waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    waiting.settimeout(STEP)
    waiting.connect(str(path))
    again = activate(sock.fileno(), "--socket", "--no-stdio", "--state-dir", str(runtime.state / "nm"))
    conn = rpcio.Conn(waiting.recv, waiting.sendall, rpcio.NDJSON, "waiting", again.stderr)
    assert conn.result("getFollowState", {"kind": "artist", "id": "banksy"}, timeout=STEP)["following"] is True
    rpcio.close_socket(waiting)
    assert again.stop() == 0, again.stderr()
    sock.close()


def test_variables_for_another_process_are_ignored(netmodel_bin, runtime, activate):
    # LISTEN_PID names the parent, which did not clear the variables: the socket is not
    # ours, and the server starts as it would without them (here on its own path).
    passed = listening(runtime.root / "other" / "passed.sock")
    own = runtime.root / "own" / "own.sock"
    server = activate(passed.fileno(), f"--socket={own}", "--no-stdio", "--state-dir", str(runtime.state / "nm"),
                      "--log-level", "info", listen_pid=str(os.getpid()))
    rpcio.wait_for(lambda: own.is_socket() or server.proc.poll() is not None, STEP)
    assert own.is_socket(), server.stderr()
    done = call(netmodel_bin, runtime, f"--socket={own}", "getFollowState", "kind=artist", "id=x")
    assert done.returncode == 0, done.stderr + server.stderr()
    assert "names another process" in server.stderr()
    assert server.stop() == 0
    passed.close()


def refused(activate, fd, *args, env=None):
    server = activate(fd, "--socket", "--no-stdio", *args, env=env)
    return server.wait(), server.stderr()


def test_a_descriptor_that_is_not_a_listening_unix_stream_socket_is_refused(activate, runtime, tmp_path):
    with open(tmp_path / "file", "w") as f:
        code, err = refused(activate, f.fileno())
    assert code == 1 and "descriptor 3 (LISTEN_FDS=1) is not a socket" in err

    bound = listening(runtime.run / "a" / "bound.sock", listen=False)
    code, err = refused(activate, bound.fileno())
    assert code == 1 and "is not listening; set Accept=no" in err

    datagram = listening(runtime.run / "b" / "dgram.sock", kind=socket.SOCK_DGRAM, listen=False)
    code, err = refused(activate, datagram.fileno())
    assert code == 1 and "is not a stream socket" in err

    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(1)
    code, err = refused(activate, tcp.fileno())
    assert code == 1 and "is not a Unix socket" in err

    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0netmodel-test-{os.getpid()}")
    abstract.listen(1)
    code, err = refused(activate, abstract.fileno())
    assert code == 1 and "not bound to a path" in err
    for s in (bound, datagram, tcp, abstract):
        s.close()


def test_more_sockets_or_a_shared_folder_are_refused(activate, runtime):
    sock = listening(runtime.run / "netmodel" / "netmodel.sock")
    code, err = refused(activate, sock.fileno(), env={"LISTEN_FDS": "2", "LISTEN_FDNAMES": "a:b"})
    assert code == 1 and "LISTEN_FDS=2 (LISTEN_FDNAMES=a:b): netmodel serves one socket" in err

    shared = runtime.root / "shared"
    loose = listening(shared / "netmodel.sock")
    shared.chmod(0o777)
    code, err = refused(activate, loose.fileno())
    assert code == 1 and f"refusing the passed socket {shared}/netmodel.sock" in err and "chmod 700" in err

    # --socket=PATH must be where the manager's socket is.
    code, err = refused(activate, sock.fileno(), f"--socket={runtime.root}/elsewhere.sock")
    assert code == 2 and "passed a socket bound to" in err
    sock.close()
    loose.close()


def test_systemd_socket_activate_starts_it_on_its_socket(netmodel_bin, runtime):
    # systemd's own implementation of the passing side, as the manager runs it.
    activate = rpcio.require_tool("systemd-socket-activate", "Debian package systemd (scripts/install-deps --test)")
    path = runtime.default_socket
    path.parent.mkdir(mode=0o700)
    env = dict(runtime.env)
    with open(runtime.logs / "socket-activate.stderr", "wb") as err:
        manager = subprocess.Popen(
            [activate, "--listen", str(path), "--fdname=netmodel", "-E", "XDG_RUNTIME_DIR", "-E", "XDG_STATE_HOME",
             str(netmodel_bin), "serve", "--socket", "--no-stdio"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env, start_new_session=True)
    try:
        assert rpcio.wait_for(lambda: path.is_socket() or manager.poll() is not None, STEP) and path.is_socket(), \
            (runtime.logs / "socket-activate.stderr").read_text()
        # A connection waits in the backlog until the server, started at once, accepts it.
        done = call(netmodel_bin, runtime, f"--timeout={STEP * 1000}", "follow", "kind=artist", "id=kaws",
                    "await:=true")
        assert done.returncode == 0, done.stderr + (runtime.logs / "socket-activate.stderr").read_text()
        assert json.loads(done.stdout)["following"] is True
    finally:
        manager.send_signal(signal.SIGTERM)
        assert manager.wait(timeout=STEP) == 0, (runtime.logs / "socket-activate.stderr").read_text()


# ---------------------------------------------------------------------------
# the units

UNITS = REPO / "contrib" / "systemd"


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    parser.optionxform = str
    parser.read_string((UNITS / name).read_text())
    return parser


def test_the_units_listen_where_the_clients_look_and_start_the_server_on_it():
    schema = json.loads((REPO / "schema" / "openrpc.json").read_text())
    default = schema["x-netmodel-protocol"]["defaultSocket"]
    socket_unit = unit("netmodel.socket")
    # %t is $XDG_RUNTIME_DIR for a user unit: the clients' default path.
    assert socket_unit["Socket"]["ListenStream"] == "%t/" + default["underEnv"]
    assert socket_unit["Socket"]["Accept"] == "no"
    assert socket_unit["Socket"]["SocketMode"] == "0600"
    assert socket_unit["Socket"]["DirectoryMode"] == "0700"
    assert socket_unit["Install"]["WantedBy"] == "sockets.target"
    service = unit("netmodel.service")
    assert service["Service"]["ExecStart"].split()[1:] == ["serve", "--socket", "--no-stdio"]
    assert service["Unit"]["Requires"] == "netmodel.socket"


def test_systemd_analyze_verifies_the_units(tmp_path):
    analyze = rpcio.require_tool("systemd-analyze", "Debian package systemd (scripts/install-deps --test)")
    for name in ("netmodel.socket", "netmodel.service"):
        text = (UNITS / name).read_text().replace("@BINDIR@", "/bin")
        # ExecStart must name an executable that exists for verify; /bin/true stands in.
        (tmp_path / name).write_text(text.replace("/bin/netmodel", "/bin/true"))
    # A user manager needs a runtime folder to resolve %t; none may exist in CI.
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))
    done = subprocess.run([analyze, "verify", "--user", "--man=no", *(str(tmp_path / n) for n in
                          ("netmodel.socket", "netmodel.service"))], capture_output=True, text=True, timeout=STEP,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert "netmodel" not in done.stderr, done.stderr
