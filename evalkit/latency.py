"""``python -m evalkit.latency probe``: measure first-token latency against the generator that serves production.

The answer check's answers usually come from a local stand-in while production is a hosted model: the
stand-in's speed says nothing about production's, so its latency is shown and never constrains. A probe
sends prompts of a few lengths, one request at a time (nothing queued behind another: each timing is a
request's own), to the endpoint the composed config's ``generator`` names, and writes a latency profile:
the fitted line of first-token seconds against prompt tokens (the same local token estimate the sweep's
configs are counted with), its residuals and slope's standard error, and per length the measured p50/p95.
``answer_check.latency_profile=FILE`` then makes latency constrain the advice and the gate.

    python -m evalkit.latency probe generator=openai generator.base_url=http://gpu:8000/v1 \\
        generator.model=served-model --out conf/latency/production.json

Exit codes: 0 written, 2 bad input or an endpoint that fails (one line).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"evalkit.latency: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _Parser(prog="python -m evalkit.latency", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    probe = sub.add_parser("probe", help="time first tokens at several prompt lengths; write a latency profile")
    probe.add_argument("--lengths", default="250,1000,2000,4000",
                       help="prompt lengths in tokens (local estimate), comma-separated")  # fmt: skip
    probe.add_argument("--repeats", type=int, default=5, help="requests per length (default 5)")
    probe.add_argument("--out", type=Path, default=Path("latency-profile.json"), help="the profile file to write")
    probe.add_argument("--config-dir", help="a project's conf/ (default ./conf when it holds project.yaml)")
    probe.add_argument("overrides", nargs="*", help="config overrides (key=value), as for python -m evalkit.sweep")
    args = parser.parse_args(argv)
    try:
        args.lengths = [int(x) for x in str(args.lengths).split(",") if x.strip()]
    except ValueError:
        parser.error(f"--lengths {args.lengths!r}: expected comma-separated whole numbers")
    if not args.lengths or min(args.lengths) < 1 or args.repeats < 1:
        parser.error("--lengths and --repeats must be positive")
    return args


def probe(lengths: Sequence[int], repeats: int, config_dir: str | None, overrides: Sequence[str]) -> dict[str, Any]:
    """The composed config's generator, probed (:func:`evalkit.answers.generation.probe.probe_generator`)."""
    from evalkit.answers.generation import make_generator
    from evalkit.answers.generation.probe import ProbeError, probe_generator
    from evalkit.answers.generation.request import GenerationError
    from evalkit.overrides import compose_run
    from evalkit.pipeline.sweep import token_family
    from evalkit.project.layers import find_source
    from evalkit.settings import ConfigError
    from evalkit.sweep import plan_from

    argv = [*(["--config-dir", config_dir] if config_dir else []), *overrides]
    source = find_source(argv, Path.cwd())
    try:
        plan, _, _ = plan_from(compose_run(source, source.argv))
    except ConfigError as exc:
        raise ProbeError(str(exc)) from None
    if plan.generator is None:
        raise ProbeError("generator: not set; name the endpoint, e.g. generator=openai generator.base_url=...")
    family = token_family(plan)
    try:
        generator = make_generator(plan.generator)
    except (GenerationError, ConfigError) as exc:
        raise ProbeError(str(exc).splitlines()[0]) from None
    model = str(generator.model or plan.generator.model)
    meta = {"generator": plan.generator.name, "endpoint_model": model,
            "base_url": getattr(plan.generator, "base_url", None), "token_family": family}  # fmt: skip
    return probe_generator(generator, model, lengths, repeats, family, meta)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from evalkit.answers.generation.probe import ProbeError

    try:
        record = probe(args.lengths, args.repeats, args.config_dir, args.overrides)
    except ProbeError as exc:
        print(f"evalkit.latency: error: {exc}", file=sys.stderr)
        return 2
    from evalkit.answers.generation.latency_profile import write_profile

    try:
        write_profile(args.out, record)
    except OSError as exc:
        print(f"evalkit.latency: error: {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    model = record["model"]
    print(
        f"evalkit.latency: {model['n']} requests: {model['intercept']:.3f} s + {1000 * model['slope']:.3f} ms per "
        f"prompt token (R² {model['r_squared']:.2f}) -> {args.out}; use it with "
        f"answer_check.latency_profile={args.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
