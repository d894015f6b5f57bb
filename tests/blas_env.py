"""Another OpenBLAS core type for a subprocess: the scores must not depend on the CPU kernel BLAS picks.

Some machines of this kind set ``OPENBLAS_CORETYPE`` (and ``OPENBLAS_L2_SIZE``) because older OpenBLAS
builds compute wrong results or crash on their processors; tests never change the variables of the
process they run in, only of a child they start.
"""

from __future__ import annotations

import os

BLAS_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
NESTED = "EVALKIT_TEST_OTHER_BLAS_CORE"
"""Set in the child, so a test that starts itself under the other core type does not recurse."""


def other_core_env() -> dict[str, str]:
    """This environment with the other setting: the variables unset where they are set, else Haswell."""
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    if not os.environ.get("OPENBLAS_CORETYPE"):
        env.update(OPENBLAS_CORETYPE="Haswell", OPENBLAS_L2_SIZE="512")
    env[NESTED] = "1"
    return env


def in_other_core_child() -> bool:
    return os.environ.get(NESTED) == "1"
