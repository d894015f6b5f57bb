"""A real two-node Ray cluster on 127.0.0.1 only, for tests: started with ``ray start``, stopped by its pids.

Why it is started this way (Ray 2.60):

- ``ray start --node-ip-address=127.0.0.1`` alone is not loopback: Ray maps 127.0.0.1 to the machine's
  network address (``services.resolve_ip_for_localhost``) while multi-node clusters are enabled, and
  its GCS and raylet then listen on all interfaces. ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` keeps the
  head (and the CLI calls and the driver, which get it in :attr:`Cluster.env`) on 127.0.0.1.
- The same flag makes ``ray start --address`` refuse to start a worker node, so the second node runs
  Ray's own CLI through :mod:`tests.loopback.ray_node`, which keeps the address it is given.
- Every process lives under a temp dir of the cluster's own (short: Unix socket paths are limited to
  107 bytes), so :func:`cluster_pids` finds exactly this cluster's processes and :func:`stop_cluster`
  ends those alone (``ray stop --force`` would end every Ray process on the machine).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LOOPBACK_ONLY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


@dataclass
class Cluster:
    address: str
    env: dict[str, str]
    second_node: subprocess.Popen[bytes]
    temp_dir: Path

    @property
    def driver_env(self) -> dict[str, str]:
        """A sweep's environment: the token, but not the loopback flag (evalkit keeps a loopback address itself)."""
        return {k: v for k, v in self.env.items() if k not in LOOPBACK_ONLY}

    @property
    def session_logs(self) -> Path:
        return self.temp_dir / "session_latest" / "logs"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def alive_nodes(address: str, env: dict[str, str]) -> int:
    status = subprocess.run(["ray", "status", f"--address={address}"], env=env, capture_output=True, text=True)
    active = status.stdout.split("Active:")[-1].split("Pending:")[0]
    return active.count("node_")


def start_cluster(log_dir: Path) -> Cluster:
    """A token-authenticated head and a second node on 127.0.0.1, one CPU each; returns once both are up."""
    temp_dir = Path(tempfile.mkdtemp(prefix="evk-ray-", dir="/tmp"))
    env = {
        **os.environ,
        **LOOPBACK_ONLY,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    port = free_port()
    address = f"127.0.0.1:{port}"
    head = [
        "ray", "start", "--head", f"--port={port}", "--include-dashboard=false", "--disable-usage-stats",
        "--num-cpus=1", "--node-ip-address=127.0.0.1", f"--temp-dir={temp_dir}",
    ]  # fmt: skip
    subprocess.run(head, env=env, check=True, capture_output=True)
    log = (log_dir / "second-node.log").open("wb")
    node_env = {k: v for k, v in env.items() if k not in LOOPBACK_ONLY}  # see tests.loopback.ray_node
    second = subprocess.Popen(
        [sys.executable, "-m", "tests.loopback.ray_node", "start", f"--address={address}", "--block",
         "--num-cpus=1", "--node-ip-address=127.0.0.1"],
        env=node_env, stdout=log, stderr=log, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    cluster = Cluster(address, env, second, temp_dir)
    deadline = time.monotonic() + 90
    while alive_nodes(address, env) < 2:
        if time.monotonic() > deadline or second.poll() is not None:
            stop_cluster(cluster)
            raise RuntimeError(f"the second Ray node did not join within 90 s (see {log_dir / 'second-node.log'})")
        time.sleep(1)
    return cluster


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _parents() -> dict[int, int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            parents[int(entry.name)] = int(fields[1])
    return parents


def process_tree(roots: set[int]) -> set[int]:
    """``roots`` and every live descendant (workers retitle themselves, so they are found by parent)."""
    parents = _parents()
    tree, grew = set(roots) & set(parents), True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return tree


def cluster_pids(cluster: Cluster) -> set[int]:
    """This cluster's processes: those naming its temp dir, the second node's launcher, and their children."""
    marker = str(cluster.temp_dir).encode()
    roots = {pid for pid in _parents() if marker in _cmdline(pid)}
    return process_tree(roots | {cluster.second_node.pid})


def stop_cluster(cluster: Cluster) -> None:
    """SIGTERM to this cluster's processes, SIGKILL to what is left after 10 s, its temp dir removed.

    No other Ray process is touched (another cluster on the machine keeps running)."""
    if cluster.second_node.poll() is None:
        cluster.second_node.terminate()
        try:
            cluster.second_node.wait(timeout=60)
        except subprocess.TimeoutExpired:
            cluster.second_node.kill()
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        pids = cluster_pids(cluster)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.2)
    shutil.rmtree(cluster.temp_dir, ignore_errors=True)  # the session's logs and sockets go with the cluster


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has stopped; its parent reaps it


def listening_sockets(pids: set[int]) -> list[tuple[int, str, str, int]]:
    """``(pid, process name, local address, port)`` of every TCP socket in LISTEN state held by ``pids``."""
    listening: dict[str, tuple[str, int]] = {}
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                host, port = fields[1].split(":")
                listening[fields[9]] = (_address(host, v6), int(port, 16))
    found = []
    for pid in sorted(pids):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue  # ended meanwhile
        for link in links:
            inode = link.removeprefix("socket:[").removesuffix("]")
            if link.startswith("socket:[") and inode in listening:
                found.append((pid, name, *listening[inode]))
    return found


def _address(hex_host: str, v6: bool) -> str:
    raw = bytes.fromhex(hex_host)
    if not v6:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))  # four host-order 32-bit words
    return socket.inet_ntop(socket.AF_INET6, words)


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, or 127.x mapped into IPv6 (a dual-stack socket bound to 127.0.0.1)."""
    return address.startswith("127.") or address == "::1" or address.startswith("::ffff:127.")
