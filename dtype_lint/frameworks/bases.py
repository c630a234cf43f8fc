"""Qualified names of the base classes that make a class a torch module, a Flax module
or a dataset, and the names of loss classes (no LibCST here: the prefilter uses them
too)."""

from dtype_lint.frameworks.facts import bundled_kinds

TORCH_MODULE_BASES = frozenset(
    {
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "pytorch_lightning.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "pytorch_lightning.core.LightningModule",
    }
)
# Classes that compute a loss (globs on the last name): float32 is deliberate there.
LOSS_CLASSES = ("*Loss*", "*Criterion*")
# Class attributes that name the submodules a model keeps in float32 whatever its dtype
# (Hugging Face transformers and diffusers).
KEEP_FLOAT32_ATTRIBUTES = frozenset({"_keep_in_fp32_modules", "_keep_in_fp32_modules_strict"})
FLAX_MODULE_BASES = frozenset({"flax.linen.Module", "flax.linen.module.Module", "flax.nnx.Module"})
DATASET_BASES = frozenset(
    {
        "torch.utils.data.Dataset",
        "torch.utils.data.IterableDataset",
        "torch.utils.data.dataset.Dataset",
        "torch.utils.data.dataset.IterableDataset",
    }
)

# The torch ecosystem's packages of ready-made datasets: every class in them is one.
DATASET_PACKAGES = ("torchvision.datasets.", "torchaudio.datasets.", "torchtext.datasets.")


def framework_kinds(qualified: str, torch_bases: frozenset[str] = TORCH_MODULE_BASES) -> set[str]:
    """Which of torch module / flax module / dataset a framework's class name is (by name:
    the frameworks' own classes are known without reading their source)."""
    kinds = set(bundled_kinds(qualified))
    if qualified in torch_bases or qualified.endswith("LightningModule") or qualified == "nn.Module":
        kinds.add("torch_module")  # a bare `nn.Module` whose `nn` is not imported (snippets) too
    if qualified in FLAX_MODULE_BASES:
        kinds.add("flax_module")
    if qualified in DATASET_BASES or qualified.endswith("Dataset") or (
            qualified.startswith(DATASET_PACKAGES) and qualified.rsplit(".", 1)[-1][:1].isupper()):
        kinds.add("dataset")
    return kinds


# Packages whose classes and functions the project model need not read: their classes are
# none of the kinds above (arrays, dtypes, transforms of arrays), and their functions
# cast no model handed to them. torch is read only where its modules and datasets live.
_UNREAD_ROOTS = frozenset({"numpy", "jax", "jaxlib", "ml_dtypes", "scipy", "typing_extensions"})
_TORCH_READ = ("torch.nn.", "torch.utils.data.", "torch.ao.nn.")


def unread(qualified: str) -> bool:
    """Whether a dotted name lies in a framework the project model does not read."""
    root = qualified.split(".", 1)[0]
    if root == "torch":
        return not qualified.startswith(_TORCH_READ)
    return root in _UNREAD_ROOTS
