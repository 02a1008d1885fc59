"""`aoizora emit maxdiffusion FILE --plan plan.json`: write a saved plan for a serving stack,
as `aoizora plan --emit maxdiffusion FILE` does at the end of planning (docs/maxdiffusion.md)."""

from __future__ import annotations

FORMATS = ("maxdiffusion",)


def register(sub) -> None:
    p = sub.add_parser("emit", help="write a saved plan for MaxDiffusion (command line, "
                                    "config overrides, device order)")
    p.add_argument("format", choices=FORMATS, help="the serving stack")
    p.add_argument("file", help="the file to write (YAML)")
    p.add_argument("--plan", required=True, help="a plan.json written by `aoizora plan`")
    p.set_defaults(run=run)


def run(args) -> int:
    from aoizora import maxdiffusion, plan_schema
    from aoizora.inputs import validate
    from aoizora.atomic import Batch

    validate.output_files({"FILE": args.file})
    plan = plan_schema.load(args.plan)
    doc = maxdiffusion.document(plan, path=args.file)
    with Batch() as batch:
        batch.write(args.file, maxdiffusion.yaml_text(plan, doc=doc))
    print(f"wrote {args.file}; device order: {doc['maxdiffusion']['device_order']}")
    return 0
