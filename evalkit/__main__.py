"""``python -m evalkit COMMAND``: one front door to evalkit's commands.

``init DIR`` writes a team's project folder; ``sweep``, ``gate``, ``report``, ``labels`` and ``replay``
run the module of the same name (``python -m evalkit sweep ...`` is ``python -m evalkit.sweep ...``);
``completion bash`` prints a bash completion script for the ``evalkit`` command.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

COMMANDS = {
    "init": "evalkit.project.init",
    "sweep": "evalkit.sweep",
    "gate": "evalkit.gate",
    "report": "evalkit.report.__main__",
    "labels": "evalkit.labels.__main__",
    "replay": "evalkit.replay",
}
USAGE = "usage: python -m evalkit {" + ",".join([*COMMANDS, "completion"]) + "} ..."
# `evalkit sweep <TAB>` asks Hydra's own completion (the evalkit-sweep console script) for keys and options.
BASH_COMPLETION = """_evalkit_complete() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "%s" -- "$cur"))
    elif [ "${COMP_WORDS[1]}" = "sweep" ] && command -v evalkit-sweep >/dev/null; then
        local line="evalkit-sweep ${COMP_LINE#*sweep}"
        COMPREPLY=($(COMP_LINE="$line" COMP_POINT=${#line} evalkit-sweep -sc query=bash))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o nospace -o default -F _evalkit_complete evalkit
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(f"{USAGE}\n{__doc__.strip()}")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "completion":
        if rest != ["bash"]:
            print("evalkit: error: completion: only 'bash' is supported (completion bash)", file=sys.stderr)
            return 2
        print(BASH_COMPLETION % " ".join([*COMMANDS, "completion"]), end="")
        return 0
    if command not in COMMANDS:
        print(f"evalkit: error: unknown command {command!r}; {USAGE}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[command])
    if command == "sweep":
        module.main(rest)
        return 0
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
