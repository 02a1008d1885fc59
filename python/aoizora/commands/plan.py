"""`aoizora plan`: the main job. Chooses the sharding and the placement, writes the plan,
and optionally the HTML report and a Perfetto trace of the chosen plan."""

from __future__ import annotations

import os

# The terminal summary lives in plan_summary; compare and the tests read these from here too.
from aoizora.plan_summary import (comparison_rows, print_choice, print_comparison,  # noqa: F401
                                  print_video)

DEFAULTS = {"model": "wan2.1-t2v-1.3b", "video": "480p", "topology": "v5e:2x4"}
# The options that choose what is planned (compare --plan refuses them beside a saved plan).
WORKLOAD_FLAGS = ("model", "video", "frames", "topology", "hardware", "top_k", "workers",
                  "oracle", "steps", "no_video", "robust", "defend", "draws", "batch")


def add_workload_args(p) -> None:
    from aoizora.compile import executor
    from aoizora.hardware import hardware_file
    from aoizora.inputs.validate import float_arg, int_arg

    p.add_argument("--model", help=f"model preset (default {DEFAULTS['model']}), or your own: "
                   "FILE.py:FUNCTION or pkg.module:FUNCTION returning a FunctionSpec or a "
                   "ModelSpec (examples/flux_dit.py)")
    p.add_argument("--video", help=f"480p, 720p or tiny (default {DEFAULTS['video']}, or the "
                   "model's own size where it has no 480p: 720p for wan2.2-ti2v-5b)")
    p.add_argument("--frames", type=int_arg("--frames", 1, 100_001),
                   help="4k+1 frames such as 21, 41 or 81 (default 21; tiny has 9)")
    p.add_argument("--topology", help="slice name such as v5e:2x4, v5e:4x4, v4:2x2x2, or a "
                   f"topology JSON file (default {DEFAULTS['topology']})")
    hardware_file.add_argument(p)
    p.add_argument("--batch", type=int_arg("--batch", 1, 4096), default=None, metavar="B",
                   help="videos per call (default 1): every program compiled at the batch "
                        "2B (each video's CFG pair), data parallelism over the videos beside "
                        "CFG; plan.json gives seconds per call and per video")
    p.add_argument("--steps", type=int_arg("--steps", 1, 10_000), default=None,
                   help="denoising steps per video (default: the model's MaxDiffusion config: "
                        "30 for Wan 2.1 1.3B, 50 for 14B, 40 for Wan 2.2 A14B)")
    p.add_argument("--no-video", action="store_true", default=None,
                   help="plan one transformer forward only: leave the text encoder, the VAE "
                        "decode and seconds per video out")
    p.add_argument("--robust", action="store_true", default=None,
                   help="choose the best worst case: the lowest high end of each candidate's "
                        "interval from the leave-one-out error bands, not the best simulated "
                        "figure (plan.json's uncertainty.rule says which chose)")
    p.add_argument("--defend", type=float_arg("--defend", 0.0, 1.0), default=None,
                   help="P(faster) across joint draws of the model a change to what you run "
                        "(the placement, the existing deployment, compiler flags) needs "
                        "(default 0.9; 0: take the best simulated figure, always)")
    p.add_argument("--draws", type=int_arg("--draws", 10, 10_000), default=None,
                   help="joint draws of the chip's figures every compared row is priced "
                        "under (default 100; docs/planner.md, 'How sure')")
    p.add_argument("--top-k", type=int_arg("--top-k", 1, 1000), default=None,
                   help="shardings kept by Stage 1, 1 to 1000 (default: K from measured recall)")
    p.add_argument("--workers", type=int_arg("--workers", 1, 256), default=None,
                   help="compile processes, 1 to 256 (default: one per two cores)")
    executor.add_argument(p)
    p.add_argument("--runtime", choices=("jax", "maxdiffusion"), default=None,
                   help="who runs the plan, priced as it executes: AoiZora's JAX runtime "
                        "(Plan.mesh; the default) or MaxDiffusion (its sharding rules and "
                        "kernels, the text encoder on the host; the default with --emit "
                        "maxdiffusion)")
    p.add_argument("--oracle", action="store_true", default=None,
                   help="also simulate every fitting sharding x every placement")
    p.add_argument("--compile-target", choices=("tpu", "cpu"), default="tpu",
                   help="compile for the slice's TPU via libtpu (default), or for CPU devices "
                        "(XLA's CPU pipeline: not the TPU's programs; only when asked)")
    p.add_argument("--full-compile", action="store_true",
                   help="on TPU targets, compile every candidate through the TPU backend "
                        "(minutes each); by default candidates are analyzed from XLA's "
                        "optimized HLO and only the plan's sharding is compiled in full")
    p.add_argument("--verify", action="store_true",
                   help="on TPU targets, compile the plan's sharding in full (the TPU "
                        "backend's checks, 20-60 s here) even where its verdict is predicted; "
                        "by default a sharding is analyzed and the backend's verdict "
                        "predicted from HBM and VMEM, compiled in full only where it cannot "
                        "be, and the plan says which")
    p.add_argument("--verify-baselines", action="store_true",
                   help="on TPU targets, compile the plan's and the baselines' shardings in "
                        "full (20-60 s each here)")
    p.add_argument("--flags", choices=("none", "published", "search"), default="none",
                   help="libtpu compiler flags (LIBTPU_INIT_ARGS): none (default: the programs "
                        "as MaxDiffusion's own flags-free run compiles them), published "
                        "(MaxDiffusion's set for the slice's generation), or search (the best "
                        "shardings compiled again under each flag set, ranked by the "
                        "simulator; docs/planner.md, 'Compiler flags')")
    p.add_argument("--flag-budget", type=int_arg("--flag-budget", 1, 1000), default=None,
                   metavar="N", help="--flags search: compiles under flags at most "
                                     "(default 16)")
    p.add_argument("--no-run-ahead", action="store_true",
                   help="on a Ray cluster of 8 or more CPUs, start the existing "
                        "deployments' compiles after the decision, not with the plan "
                        "(docs/planner.md)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--json", action="store_true", help="print the plan as JSON on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def register(sub) -> None:
    p = sub.add_parser("plan", help="choose the sharding and the placement of a model")
    add_workload_args(p)
    p.add_argument("--out", default="plan.json", help="where to write the plan (plan.json)")
    p.add_argument("--report", help="write a self-contained HTML report here")
    p.add_argument("--trace", help="write a Perfetto/Chrome trace of the chosen plan here")
    p.add_argument("--emit", nargs=2, metavar=("FORMAT", "FILE"),
                   help="also write the plan for a serving stack: `maxdiffusion FILE` writes "
                        "MaxDiffusion's config overrides and device order (docs/maxdiffusion.md)")
    p.set_defaults(run=run)


def runtime_of(args) -> str:
    """The runtime a plan is made for: --runtime, else MaxDiffusion's when the plan is emitted
    for it; a JAX-runtime plan emitted for MaxDiffusion is refused (it would run another
    program than the one priced)."""
    from aoizora.errors import UserError

    emit = args.emit[0] if getattr(args, "emit", None) else None
    if args.runtime == "jax" and emit == "maxdiffusion":
        raise UserError("--runtime jax with --emit maxdiffusion: MaxDiffusion would run "
                        "another program than the one priced; leave out --runtime")
    runtime = args.runtime or ("maxdiffusion" if emit == "maxdiffusion" else "jax")
    if runtime == "maxdiffusion" and not isinstance(args.model, str):
        raise UserError("--runtime maxdiffusion: MaxDiffusion runs its Wan presets only, not "
                        "your own model")
    return runtime


def check_workload(args) -> None:
    """The model, workload and topology, checked before any work (one line on bad input).
    A model reference (FILE.py:FUNCTION) is imported and called here: args.model becomes
    the spec it returns."""
    from aoizora.inputs import topology_file, user_model, validate
    from aoizora.errors import UserError
    from aoizora.models import default_video
    from aoizora.models.base import FunctionSpec

    if user_model.is_reference(args.model):
        args.model = user_model.load(args.model)
    if isinstance(args.model, FunctionSpec):
        if args.video is not None or args.frames is not None:
            raise UserError(f"--video/--frames: {args.model.name} is a function spec, its "
                            "arguments fix its sizes; leave them out")
    else:
        if args.video is None and args.model is not None:
            args.video = default_video(args.model, DEFAULTS["video"])
        for key in ("model", "video"):
            if getattr(args, key) is None:
                setattr(args, key, DEFAULTS[key])
        validate.workload(args.model, args.video, args.frames)
    if args.topology is None:
        args.topology = DEFAULTS["topology"]
    topology_file.load(args.topology, hardware=args.hardware)


def run_planner(args):
    from aoizora.compile import executor
    from aoizora.compile.cache import Cache
    from aoizora.errors import UserError
    from aoizora.planning.planner import Settings, plan
    from aoizora.progress import RichProgress

    check_workload(args)
    if args.executor != "local" and not isinstance(args.model, str):
        raise UserError(f"--executor {args.executor}: your own model runs in this process "
                        "(Ray workers cannot import its file); leave out --executor")
    jobs_on = executor.from_args(args)
    try:
        settings = Settings(top_k=args.top_k, workers=args.workers, oracle=bool(args.oracle),
                            cache=None if args.no_cache else Cache(),
                            compile_target=args.compile_target, hardware=args.hardware,
                            full_compile=args.full_compile,
                            verify=args.verify, verify_baselines=args.verify_baselines,
                            run_ahead=not args.no_run_ahead, executor=jobs_on,
                            video=not args.no_video, steps=args.steps,
                            robust=bool(args.robust), flags=args.flags,
                            runtime=runtime_of(args),
                            **({"defend_p": args.defend} if args.defend is not None else {}),
                            **({"draws": args.draws} if args.draws else {}),
                            **({"flag_budget": args.flag_budget} if args.flag_budget else {}))
        with RichProgress(enabled=not args.quiet) as progress:
            if jobs_on.remote:
                progress.note(f"jobs run on {jobs_on.description}")
            return plan(args.model, args.video, args.frames, args.topology, settings, progress,
                        batch=args.batch or 1)
    finally:
        jobs_on.close()


def _write_outputs(args, result) -> None:
    """plan.json, the report and the trace: all of them or none (atomic.Batch)."""
    from aoizora.atomic import Batch
    from aoizora.report import render
    from aoizora.planning.stage2 import Stage2

    from aoizora.errors import UserError

    plan = result.plan
    try:
        with Batch() as batch:
            batch.write(args.out, plan.to_json() + "\n")
            if args.report:
                trace = (os.path.relpath(os.path.abspath(args.trace),
                                         os.path.dirname(os.path.abspath(args.report)))
                         if args.trace else None)
                batch.write(args.report, render(plan, trace))
            if args.emit:
                from aoizora import maxdiffusion

                batch.write(args.emit[1], maxdiffusion.yaml_text(plan, path=args.emit[1]))
            if args.trace:
                stage2 = Stage2(result.topology)
                batch.produce(args.trace, lambda tmp: stage2.write_trace(
                    result.pairs[0], result.graph, tmp))
    except OSError as e:  # checked before planning, so the disk filled or a folder went away
        raise UserError(f"cannot write {e.filename or args.out}: {e.strerror}; nothing "
                        "was written") from None


def run(args) -> int:
    from aoizora.inputs import validate

    if args.emit and args.emit[0] != "maxdiffusion":
        from aoizora.errors import UserError

        raise UserError(f"--emit {args.emit[0]}: unknown format; use --emit maxdiffusion FILE")
    validate.output_files({"--out": args.out, "--report": args.report, "--trace": args.trace,
                           "--emit": args.emit[1] if args.emit else None})
    if args.emit:  # a model MaxDiffusion has no config for is refused before planning
        from aoizora import maxdiffusion

        maxdiffusion.config_of(args.model or DEFAULTS["model"])
        if args.batch:  # a count MaxDiffusion cannot express is refused before planning
            from aoizora.inputs import topology_file

            topology = topology_file.load(args.topology or DEFAULTS["topology"],
                                          hardware=args.hardware)
            maxdiffusion.per_device_batch_size(args.batch, topology.num_devices)
    result = run_planner(args)
    plan = result.plan
    _write_outputs(args, result)
    if args.json:
        print(plan.to_json())
        return 0
    from aoizora.terminal import echo

    target = plan.topology.get("compile_target", {})
    if target.get("platform") == "cpu":
        echo(f"compiled for {target['devices']} CPU devices (--compile-target cpu), not the TPU")
    print_choice(plan)
    print_comparison(plan)
    print_video(plan)
    from aoizora.planning import flag_search

    for line in flag_search.lines(plan.flags):
        echo(line)
    if plan.planning.get("programs", "").startswith("optimized HLO"):
        only = plan.planning.get("analysed_only", {})
        echo(f"through the TPU backend (compiled in full): "
              f"{', '.join(plan.planning['compiled_in_full']) or 'none'}; analysed only, not "
              f"compiled in full: {', '.join(only) or 'none'}"
              + (" (--verify compiles the plan's in full, --verify-baselines every one)"
                 if only else ""))
    d = plan.planning.get("decision")
    if plan.planning.get("pooling_changed_choice") and d:
        echo(f"note: Stage 1 + Stage 2 chose {d['candidate']} @ {d['placement']} "
              f"({d['simulated_s'] * 1e3:.2f} ms simulated); the baseline "
              f"{plan.planning.get('chosen_from')} simulates faster, so the plan keeps it")
    for s in result.skipped:
        echo(f"skipped: {s}")
    retried = [r["job"] for r in plan.planning.get("retries", [])]
    if retried:
        echo(f"retried {len(retried)} job(s) whose worker was lost: {', '.join(retried)} "
             "(planning.retries says why)")
    decision = plan.planning.get("decision_seconds")
    echo(f"planning took {plan.planning['seconds']:.1f} s (measured"
          + (f"; the decision {decision:.1f} s, the rest compiling and simulating the baselines"
             if decision is not None else "")
          + f"; {plan.planning['cache_hits']}/{plan.planning['jobs']} compiler jobs from cache)")
    wrote = [args.out] + [p for p in (args.report, args.trace) if p]
    echo("wrote " + ", ".join(wrote))
    return 0
