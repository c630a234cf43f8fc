"""DTL203: a lambda or local function given to a model wrapper as an output/input transform."""

from __future__ import annotations

from dtype_lint.core.deferred import cst
from dtype_lint.core.flow import PICKLING, FileFlow
from dtype_lint.core.shapes import Prefilter, words
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import argument, matches_any
from dtype_lint.rules.pickling.flow_shapes import BODY_WORDS, file_has, may_make_source, returns_local, stores_on_self


class UnpicklableWrapperTransform(Rule):
    doc = RuleDoc(
        code="DTL203",
        name="unpicklable-wrapper-transform",
        summary="Lambda or local function stored by a model wrapper",
        what_it_does="""
            Checks calls of model wrappers (Lightning/Fabric-style) that store an output or
            input transform on the wrapped model, when the transform may hold a lambda, a
            local function or class, or a `functools.partial` of one, followed within
            the file as DTL201 describes (names, `x or (lambda ...)`, conditional
            expressions, factories, `self.attr`, `**kwargs` dicts). The wrappers and their
            arguments come from the `wrapper-transforms` option.
            """,
        why_bad="""
            The wrapper keeps the transform as an attribute of the model. The model is
            pickled whole when it is sent to spawned workers, saved with `torch.save`, or
            deep-copied for an EMA or a checkpoint: a lambda there breaks all of them, far
            from the line that stored it.
            """,
        example="""
            model = Wrapper(net, output_transform=lambda out: out.float())
            """,
        use_instead="""
            def to_float(out):
                return out.float()

            model = Wrapper(net, output_transform=to_float)
            """,
        options="""
            - `wrapper-transforms`: `"qualified.name:argument"` entries; the name may use
              shell-style wildcards (`*Module:output_transform`).
            """,
        known_limits="""
            A transform stored by assignment after construction is DTL204's; one passed
            through `**kwargs` built in another function is not seen. See DTL201 for the
            flows not followed.
            """,
    )
    message = (
        "{kind} stored on the model by {sink} cannot be pickled: the model can no longer "
        "be sent to spawned workers (forkserver is the Linux default since Python 3.14), "
        "saved with torch.save or deep-copied; define the transform at module level"
    )
    options_used = ("wrapper-transforms",)
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        names = tuple(sorted({p.rpartition(":")[2] for p in options.wrapper_transforms}))
        keywords = words(list(names))

        def keeps(t, lc, u) -> bool:
            if any(name in t for name in names) and may_make_source(t, lc, u):
                return True
            if u is None or not file_has(u, keywords, names):
                return False
            # A factory method (`self.make()` may give what it returns to a wrapper), or a
            # value stored on self here that may reach a wrapper in another method.
            return returns_local(lc, u) or (
                stores_on_self(t, u, imported=True) and may_make_source(t, lc, u, via_self=False))

        return Prefilter(keeps, import_words=("transform", "lambda", "partial"), value_words=("lambda", "partial"),
                         body_words=BODY_WORDS)

    valid = (
        "def to_float(o): ...\nWrapper(net, output_transform=to_float)",
        "metric = accuracy(preds, output_fn=lambda o: o)",
    )
    invalid = (
        Invalid("model = Wrapper(net, output_transform=lambda o: o.float())"),
        Invalid("def build(net):\n    def pre(x): ...\n    return FabricModule(net, input_transform=pre)"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.resolve(node.func)
        if not qualified:
            return
        for entry in self.options.wrapper_transforms:
            pattern, _, keyword = entry.rpartition(":")
            if not matches_any(qualified, (pattern,)):
                continue
            value = argument(node, None, keyword)
            flow = FileFlow.of(self.ctx)
            sources = (flow.sources(value, PICKLING) if value is not None else []) + flow.keyword_sources(
                node, keyword, PICKLING)
            for source in sources:
                sink = f"{qualified.rsplit('.', 1)[-1]}({keyword}=...)"
                self.report(source.at, self.message.format(kind=source.kind, sink=sink), flow=source.steps)
