"""Ray's own ``ray`` CLI, with 127.0.0.1 kept as given: a worker node of a loopback-only test cluster.

Ray 2.60's ``ray start --address`` maps a loopback node or head address to the machine's network address
(``services.resolve_ip_for_localhost``) and refuses to start a worker node when that mapping is turned off
(``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``). A test cluster on one machine needs neither, so this launcher
keeps the address unchanged and runs the CLI as ``python -m tests.loopback.ray_node start ...``.
"""

from __future__ import annotations

import sys

from ray._private import services
from ray.scripts.scripts import main


def _as_given(host: str) -> str:
    return host


if __name__ == "__main__":
    services.resolve_ip_for_localhost = _as_given  # the CLI and canonicalize_bootstrap_address read it from here
    sys.argv[0] = "ray"
    sys.exit(main())
