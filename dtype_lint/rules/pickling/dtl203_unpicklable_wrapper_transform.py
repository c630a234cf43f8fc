"""DTL203: a lambda or local function given to a model wrapper as an output/input transform."""

from __future__ import annotations

from dtype_lint.concepts import unpicklable, wrappers
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


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
        confidence="""
            `high` where the wrapper is seen to be a model wrapper; `medium` where the
            owner of the transform is taken as a data module, a transform or a model by
            its name.
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
    finds = Finds(at=(wrappers.WrapperTransforms,), flow=unpicklable.PICKLING)

    valid = (
        "def to_float(o): ...\nWrapper(net, output_transform=to_float)",
        "metric = accuracy(preds, output_fn=lambda o: o)",
    )
    invalid = (
        Invalid("model = Wrapper(net, output_transform=lambda o: o.float())"),
        Invalid("def build(net):\n    def pre(x): ...\n    return FabricModule(net, input_transform=pre)"),
    )
