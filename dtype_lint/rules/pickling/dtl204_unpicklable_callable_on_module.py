"""DTL204: a lambda or local function stored on an nn.Module, LightningModule or Dataset."""

from __future__ import annotations

from dtype_lint.concepts import kept, local_modules, schedulers, test_code, unpicklable
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


class CallableOnModule(Rule):
    doc = RuleDoc(
        code="DTL204",
        name="unpicklable-callable-on-module",
        summary="Lambda or local function stored on a module or dataset",
        what_it_does="""
            Checks for a value pickle cannot store by reference (a lambda, a local
            function or class, a generator, a factory's local function, a
            `functools.partial` of one or a method bound from one with
            `types.MethodType`: the sources of DTL201, followed within the file
            through names, `x or (lambda ...)`, conditional expressions and displays)
            stored on an object that is pickled whole:

            - an attribute of `self` in a method of a `torch.nn.Module`,
              `LightningModule`, `Dataset`, a Lightning data module (a class whose name
              or base ends in `DataModule`), or a transform/processor/collator/reader
              class (`transform-classes`), which datasets hold;
            - an attribute (or `setattr`) of a receiver known to be a model, or of an
              instance the file constructs of such a class: `ds = MyDataset(...)`,
              `dm = cls()` in a classmethod, `type(self)()`;
            - an attribute's container: `self.funcs.append(...)`, `self.table[k] = ...`,
              and what a `defaultdict` keeps (its default factory);
            - an attribute of a submodule or any object inside a model
              (`model.encoder.head = Local()`): it is pickled with the model;
            - a hook registered on a model that the function hands back
              (`m.register_forward_hook(f)` ... `return model`), or on `self` (or a
              submodule of it) in a method of a class pickled whole
              (`self._register_state_dict_hook(remap)` in a module's `__init__`): the
              model keeps it; and a hook an engine, a trainer, an optimizer or a patch
              function registers on a model it holds or walks (`self.module`,
              `for m in model.modules()`): the model keeps it whoever installs it
              (`medium`; `low` where the handle is kept and the file removes hooks;
              a hook removed in the same function is not reported);
            - a lambda in a class body (`class Metric(Enum): COSINE = lambda ...`),
              named `Metric.<lambda>`, which pickle cannot import: reported where a
              module's constructor of this file keeps a parameter whose default is a
              member of that class;
            - an argument of a `Dataset` constructor (a class of the file or project
              that derives from one, or any class of `torchvision.datasets`,
              `torchaudio.datasets` and `torchtext.datasets`) or of a dataset-pipeline
              stage (`wds.map_dict(text=lambda t: ...)`); not one the constructor only
              calls, where the project model reads it (`label_fn(path)` while the items
              are listed keeps nothing). A lambda that a factory
              method returns (`def default_transforms(self): return lambda ...`) is
              reported once, where it is written, however many loaders call the
              factory; a closure a wrapper factory builds from its arguments is
              reported where it is stored;
            - an argument that a module's constructor keeps on `self`, in this file
              (above or below the call) or another: the project model reads the class's
              `__init__` where it is defined (a store on `self`, or every parameter
              through `set_attributes(self, locals())` or `self.__dict__.update(locals())`),
              and the finding's path shows the store and the bases;
            - a lambda that a parameter defaults to (`def make(fuse=lambda a, b: a + b)`),
              where the parameter reaches any of these: reported at the default, `medium`,
              since a caller may always pass a function of its own;
            - an attribute stored on `self` in a mixin that a module class of the file
              derives from (`class Merged(nn.Linear, LoRAMixin)`): `medium`;
            - a `LambdaLR` or `MultiplicativeLR` over a local callable, kept like any
              carrier where a module stores it, and reported (`low`, the audit mode's) where
              a function hands it back (a scheduler factory, `configure_optimizers`): a
              trainer that pickles it whole (`ddp_spawn`, `torch.save`) fails, one that
              saves only its `state_dict` does not;
            - a module class defined inside a function: every model built from it keeps
              a class that pickle cannot import by name (`high` where the function returns
              an instance or stores one on a model or dataset);
            - an argument of `super().__init__(...)` (or `super(Cls, self).__init__`) in a
              subclass of a dataset, or of a module whose constructor keeps that
              parameter: the first base's constructor runs on the subclass's instance
              and keeps the value there (`super().__init__(parser=Wrapper(tok))`);
            - a model's `forward` replaced by a wrapper built around it
              (`model.forward = wrap(model.forward)`), which returns a closure;
            - any object's `forward` replaced by such a value, whatever the object is
              called (`block.forward = MethodType(local, block)`): only a module has a
              `forward` to replace. Not a class's (`cls.forward = ...`: pickle names the
              class), not an instance the file builds from a plain class of its own,
              and not a local function that sets the attribute back when it is called
              (a one-shot redirect).

            Test code is not reported: a test pickles what it builds only on purpose,
            and fails on its own if it does (processes a test starts are DTL201-203's).
            """,
        why_bad="""
            Modules and datasets are pickled whole, with the transforms and pipeline
            stages they hold: datasets when a `DataLoader` starts
            workers under `spawn`/`forkserver` (the Linux default since Python 3.14),
            modules by `torch.save(model)`, `copy.deepcopy` (EMA, checkpoints) and
            spawned trainers. One lambda attribute makes the whole object unpicklable,
            and the error names the lambda, not the line that stored it.
            """,
        example="""
            class Block(nn.Module):
                def __init__(self, act):
                    super().__init__()
                    self.act = lambda x: x * torch.sigmoid(x)
            """,
        use_instead="""
            class Block(nn.Module):
                def __init__(self, act):
                    super().__init__()
                    self.act = nn.SiLU()
            """,
        confidence="""
            `high` where the object the callable is kept on is seen to be a module or a
            dataset (constructed from one, `self` inside one); `medium` where it is taken
            as one by a convention (a `models` path, a factory or a name such as `model`),
            for hooks an engine or callback registers on a model it holds, for a lambda a
            parameter defaults to and for a mixin of a module class; `low` for a lambda
            scheduler a function hands back (whether its receiver pickles it whole is not
            seen), for a copy of a module, for a hook whose handle is kept in a file that
            removes hooks, for a module class made in a function named for export or
            inference or whose instances the function neither returns nor stores on
            something that crosses, and for a dataset the file hands only to loaders
            without workers (another caller may give it some).
            """,
        precision="very-high",
        known_limits="""
            Only classes derived (in this file, or through the files and installed
            packages the project model reaches) from the torch, Lightning or Dataset bases, data modules and transform classes by name, `self` in their
            methods, instances constructed in the same file, and receivers recognised as
            models (see `module-names`) are checked; a lambda stored on class level is
            not an instance attribute and is not reported. A store of one attribute of
            `self` into another is not reported again. An object handed to a dataset
            elsewhere (a reader a dataset calls) is known only by its class name. A wrapper that returns a module-level
            function is still reported when it wraps `forward`. A transform
            class is known by its name only, and is reported whether or not it ever
            reaches a dataset, and a pipeline stage
            (`pipeline-stages`) whether or not its loader has workers. What a factory of
            another file returns is followed at DTL201-203's sinks (process targets,
            loaders, wrappers), not at stores: `self.fn = make_fn()` with `make_fn` in
            another file is not reported here.
            """,
    )
    message = (
        "{kind} stored on {owner} makes it unpicklable: DataLoader workers under "
        "spawn/forkserver (the Linux default since Python 3.14), torch.save and deepcopy "
        "fail; use a module-level function or an nn.Module such as nn.SiLU()"
    )
    options_used = ("module-names", "module-bases", "pipeline-stages", "transform-classes")
    # A test builds objects to check them and pickles one only on purpose (then the test
    # fails and says so); a process it starts is another matter (DTL201-203 report those).
    finds = Finds(
        at=(kept.AttributeStores, kept.Hooks, kept.ConstructorArguments, kept.ClassBodyLambdas,
            schedulers.ReturnedSchedulers, local_modules.LocalModuleClasses),
        flow=unpicklable.PICKLING_IN_FILE,
        unless=(test_code.TEST_CODE, kept.ONE_SHOT_REDIRECT, kept.DATASET_WITHOUT_WORKERS),
    )

    valid = (
        "class Block(nn.Module):\n    act = staticmethod(lambda x: x)",
        "class Block(nn.Module):\n    def __init__(self):\n        self.act = nn.SiLU()",
        "class Config:\n    def __init__(self):\n        self.fn = lambda x: x",
        "class Block(nn.Module):\n    def forward(self, x):\n        f = lambda y: y\n        return f(x)",
        "import webdataset as wds\ndef tok(t): ...\nstage = wds.map_dict(text=tok)",
        "class Resize:\n    def __init__(self):\n        self.size = 4\n    def __call__(self, x): ...",
        "class Registry:\n    def __init__(self):\n        self.make = lambda: {}",
        "class Registry:\n    def __init__(self, make):\n        self.make = make\n"
        "class Defaults(Registry):\n    def __init__(self):\n        super().__init__(lambda: {})",
        "def redirect(module):\n    original = module.forward\n    def once(*a):\n"
        "        module.forward = original\n        return a\n    module.forward = once",
    )
    invalid = (
        Invalid("class Block(nn.Module):\n    def __init__(self):\n        self.act = lambda x: x"),
        Invalid("from torch.utils.data import Dataset\nclass Manifest(Dataset):\n    def __init__(self, parser):\n"
                "        self.parser = parser\nclass Chars(Manifest):\n    def __init__(self):\n"
                "        super().__init__(lambda text: list(text))"),
        Invalid("from torch.utils.data import Dataset\nclass Ds(Dataset):\n"
                "    def __init__(self):\n        self.tf = lambda x: x"),
        Invalid("def prepare(model):\n    def forward(*a):\n        return 1\n    model.forward = forward"),
        Invalid("def prepare(model):\n    model.forward = wrap_fp32(model.forward)"),
        Invalid("class Block(nn.Module):\n    def __init__(self, act):\n"
                "        self.act = nn.ReLU() if act else lambda x: x"),
        Invalid("from torch.utils.data import Dataset\nclass MyDataset(Dataset): ...\n"
                "ds = MyDataset(items, lambda x: x)"),
        Invalid("import webdataset as wds\npipeline = [wds.map_dict(text=lambda t: tokenize(t)[0])]"),
        Invalid("class TextProcessor:\n    def __init__(self):\n        self.fn = lambda x: x\n"
                "    def __call__(self, x):\n        return self.fn(x)"),
        Invalid("class Net(nn.Module):\n    def __init__(self, head=None):\n"
                "        self.head = head or (lambda x: x)"),
        Invalid("class Net(nn.Module):\n    def __init__(self):\n        self.fns = []\n"
                "        self.fns.append(lambda x: x)"),
        Invalid("import collections\nclass Net(nn.Module):\n    def __init__(self):\n"
                "        self.weights = collections.defaultdict(lambda: 1.0)"),
        Invalid("class Scale(nn.Module):\n    def __init__(self, fn):\n        super().__init__()\n"
                "        self.fn = fn\nhead = Scale(lambda x: x * 2)"),
        Invalid("class PairDataModule:\n    @classmethod\n    def build(cls, ds):\n"
                "        def loader():\n            return ds\n"
                "        dm = cls()\n        dm.train_dataloader = loader"),
        Invalid("class Remap(nn.Module):\n    def __init__(self):\n        def rename(m, sd, *a):\n"
                "            return sd\n        self._register_state_dict_hook(rename)"),
        Invalid("import types\ndef patch(blocks):\n    for block in blocks:\n"
                "        block.forward = types.MethodType(lambda self, x: x, block)"),
    )
