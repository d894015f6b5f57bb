"""How the driver reaches Ray: a local instance on loopback only, a head within a bounded time, one line on failure.

Why each step (Ray 2.60):

- **Loopback.** Ray maps ``127.0.0.1`` / ``localhost`` to the machine's network address
  (``services.resolve_ip_for_localhost``) whenever multi-node clusters are enabled
  (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``, on by default on Linux), and its GCS and raylet then listen on
  all interfaces, its runtime-env agent on that address. With the flag off the node's address stays
  ``127.0.0.1`` and every server binds it. evalkit turns the flag off, while ``ray.init`` runs, for the
  local instance it starts and for an ``executor.address`` on loopback. Any other address is left as Ray
  resolves it: the driver of a multi-machine cluster must be reachable from the other machines.
- **Bounded.** ``ray.init(address=...)`` tries the GCS 20 times, each up to ~40 s where nothing answers
  (minutes on a wrong port). The driver first opens a TCP connection (refused at once, silence bounded by
  ``executor.connect_timeout_s``), then does one GCS handshake in what is left of that budget; only then
  ``ray.init``.
- **One line.** Ray's C++ client writes every failed attempt to file descriptor 2 (~20 lines for a
  missing token). The handshake and ``ray.init`` run with descriptor 2 sent to a temporary file; a
  failure becomes one :class:`ClusterUnreachable` line naming the address (and, for a refused token,
  how to give it).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ray
from ray._private import ray_constants

from evalkit.pipeline.executor_settings import ClusterUnreachable, ExecutorSettings

CLUSTER_FLAG = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
RAY_CONNECT_WAITS_S = 10.0
"""Ray's own waits inside one GCS handshake (2 x ``gcs_rpc_server_connect_timeout_s``, 5 s, read when Ray is
imported, so the driver cannot shorten them): the handshake gets the budget minus these."""
TOKEN_HOW = (
    "set RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN (or a file named by RAY_AUTH_TOKEN_PATH, "
    "or ~/.ray/auth_token) for the sweep"
)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a ``host:port`` / ``ray://host:port`` address; None when it is not one."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


@contextmanager
def loopback_only(active: bool) -> Iterator[None]:
    """Ray's multi-node flag off in this process (read when called) and for the processes it starts meanwhile."""
    if not active:
        yield
        return
    before_flag, before_env = ray_constants.ENABLE_RAY_CLUSTER, os.environ.get(CLUSTER_FLAG)
    ray_constants.ENABLE_RAY_CLUSTER = False
    os.environ[CLUSTER_FLAG] = "0"  # the GCS, raylet and agents of a local instance inherit it
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before_flag
        if before_env is None:
            os.environ.pop(CLUSTER_FLAG, None)
        else:
            os.environ[CLUSTER_FLAG] = before_env


@contextmanager
def ray_stderr_captured() -> Iterator[Callable[[], str]]:
    """Descriptor 2 into a temporary file (Ray's C++ logging writes there, not to ``sys.stderr``); yields a reader."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lambda: _read(sink)
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _read(sink: Any) -> str:
    sink.flush()
    sink.seek(0)
    return sink.read().decode(errors="replace")


def check_reachable(address: str, timeout_s: float) -> None:
    """A TCP connection and one GCS handshake to ``address`` within about ``timeout_s``, or one line why not.

    ``auto`` is first resolved as Ray resolves it (``RAY_ADDRESS``, then the cluster ``ray start`` made on
    this machine): finding none is one line here, before the run folder is announced.
    """
    if address == "auto":
        address = _auto_address()
    parts = host_port(address)
    if parts is None:
        return  # not host:port (Ray's own forms, e.g. a cluster name): ray.init judges it
    deadline = time.monotonic() + timeout_s
    try:
        socket.create_connection(parts, timeout=timeout_s).close()
    except OSError as exc:
        why = f"no answer within {timeout_s:g} s" if isinstance(exc, TimeoutError) else _os_reason(exc)
        raise ClusterUnreachable(
            f"executor=ray: no Ray cluster at {address} ({why}); start its head there "
            f"(ray start --head --port={parts[1]}) or fix executor.address"
        ) from None
    if address.startswith("ray://"):
        return  # a Ray Client server, not a GCS: ray.init's client handshake follows
    left_ms = int(max(1.0, deadline - time.monotonic() - RAY_CONNECT_WAITS_S) * 1000)
    from ray._raylet import InnerGcsClient

    with loopback_only(is_loopback(parts[0])), ray_stderr_captured():
        try:
            InnerGcsClient.standalone(address, None, left_ms)
        except ray.exceptions.AuthenticationError:
            raise ClusterUnreachable(token_refused(address)) from None
        except ray.exceptions.RayError:
            raise ClusterUnreachable(
                f"executor=ray: {address} accepts connections but no Ray GCS answered in about {timeout_s:g} s; "
                "give the head's GCS port (ray start --head --port) in executor.address"
            ) from None


def _auto_address() -> str:
    from ray._private.services import canonicalize_bootstrap_address_or_die

    try:
        with ray_stderr_captured():
            return str(canonicalize_bootstrap_address_or_die("auto"))
    except Exception as exc:  # Ray raises ConnectionError (none or several found), ValueError (a bad RAY_ADDRESS)
        raise ClusterUnreachable(
            f"executor=ray: executor.address=auto found no single running Ray cluster on this machine "
            f"({_first_line(exc)}); start one (ray start --head) or give its host:port"
        ) from None


def token_refused(address: str) -> str:
    """The line for a cluster that refused this driver's token (the token itself is never shown)."""
    mode = os.environ.get("RAY_AUTH_MODE", "")
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    has_token = bool(os.environ.get("RAY_AUTH_TOKEN")) or Path(path or Path.home() / ".ray" / "auth_token").exists()
    if mode != "token":
        state = f"RAY_AUTH_MODE is {mode!r}, not 'token', so no token was sent" if mode else "no token was sent"
    elif not has_token:
        state = "RAY_AUTH_MODE=token but no token was found"
    else:
        state = "the token given does not match the cluster's"
    refused = f"executor=ray: the Ray cluster at {address} requires an auth token and refused this driver"
    return f"{refused} ({state}); {TOKEN_HOW}"


def connect(settings: ExecutorSettings) -> None:
    """``ray.init`` for the sweep: a local instance on loopback, or ``executor.address`` once it is reachable."""
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    address = settings.address
    if address is None:
        options["num_cpus"] = settings.num_cpus
        loopback, where = True, "a local Ray instance"
    else:
        check_reachable(address, settings.connect_timeout_s)
        options["address"] = address
        parts = host_port(address)
        loopback, where = parts is not None and is_loopback(parts[0]), f"Ray at {address}"
    with loopback_only(loopback), ray_stderr_captured() as captured:
        try:
            ray.init(**options)
        except ray.exceptions.AuthenticationError:
            raise ClusterUnreachable(token_refused(str(address))) from None
        except (ConnectionError, RuntimeError, ValueError) as exc:
            if "InvalidAuthToken" in captured():
                raise ClusterUnreachable(token_refused(str(address))) from None
            raise ClusterUnreachable(f"executor=ray: cannot start or reach {where}: {_first_line(exc)}") from None


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    return exc.strerror or type(exc).__name__


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0][:200] if lines else type(exc).__name__
