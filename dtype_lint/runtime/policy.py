"""The dtype policy a model is checked against: params, compute and output dtypes.

The text form follows jmp (``"params=float32,compute=bfloat16,output=float32"``,
short keys ``p``/``c``/``o``, short names ``f32``/``bf16``/``f16``) and adds presets.
"""

from __future__ import annotations

import dataclasses

from dtype_lint.runtime.dtypes import dtype_name, is_floating

#: ``output`` values that are not dtypes: follow the floating inputs of the outermost
#: call, the framework's default float dtype, or the compute dtype.
OUTPUT_MODES = ("input", "default", "compute")

_KEYS = {"p": "params", "params": "params", "c": "compute", "compute": "compute",
         "o": "output", "output": "output", "autocast": "autocast"}

# Mixed presets keep jmp's convention of float32 outputs (the loss sees float32).
# Autocast presets describe what torch.autocast does: float32 params, outputs as
# computed, and float32 accepted wherever autocast itself keeps or produces it.
PRESETS = {
    "float32": ("float32", "float32", "float32"),
    "bfloat16": ("bfloat16", "bfloat16", "bfloat16"),
    "float16": ("float16", "float16", "float16"),
    "mixed_bfloat16": ("float32", "bfloat16", "float32"),
    "mixed_float16": ("float32", "float16", "float32"),
    "autocast_bfloat16": ("float32", "bfloat16", "compute", True),
    "autocast_float16": ("float32", "float16", "compute", True),
}

_ON = {"on": True, "true": True, "1": True, "yes": True,
       "off": False, "false": False, "0": False, "no": False}


def _floating_name(value: object, field: str) -> str:
    try:
        name = dtype_name(value)
    except ValueError:
        raise ValueError(f"{field}: not a dtype: {value!r}") from None
    if not is_floating(name):
        raise ValueError(f"{field}: {value!r} is not a floating dtype")
    return name


@dataclasses.dataclass(frozen=True)
class Policy:
    """Expected dtypes: ``params`` (storage), ``compute`` (activations), ``output``.

    Dtypes may be given as torch/NumPy/JAX dtypes or names; they are kept as canonical
    names. ``output`` may also be ``"input"``, ``"default"`` or ``"compute"``.
    ``autocast=True`` accepts float32 activations and outputs wherever
    ``torch.autocast`` itself keeps float32 (see :mod:`~dtype_lint.runtime.autocast`).
    """

    params: str = "float32"
    compute: str = "float32"
    output: str = "float32"
    autocast: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", _floating_name(self.params, "params"))
        object.__setattr__(self, "compute", _floating_name(self.compute, "compute"))
        output = self.output
        if isinstance(output, str) and output.strip().lower() in OUTPUT_MODES:
            output = output.strip().lower()
        else:
            output = _floating_name(output, "output")
        object.__setattr__(self, "output", output)
        object.__setattr__(self, "autocast", bool(self.autocast))

    @classmethod
    def parse(cls, text: str) -> Policy:
        """Parse a preset (``"mixed_bfloat16"``) or ``"p=f32,c=bf16,o=f32"``.

        Missing keys default to: params ``float32``, compute = params, output = params.
        """
        if not isinstance(text, str):
            raise ValueError(f"policy text must be a string, got {text!r}")
        stripped = text.strip()
        preset = PRESETS.get(stripped.lower())
        if preset is not None:
            return cls(*preset)  # type: ignore[arg-type]
        if "=" not in stripped:
            # A bare dtype name means the whole policy is that dtype.
            name = _floating_name(stripped, f"policy {text!r}")
            return cls(name, name, name)
        values: dict[str, str] = {}
        for part in stripped.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            key = key.strip().lower()
            if not sep or key not in _KEYS:
                raise ValueError(f"bad policy part {part.strip()!r} in {text!r}: "
                                 "expected params=, compute= or output= (p=, c=, o=)")
            field = _KEYS[key]
            if field in values:
                raise ValueError(f"{field} given twice in policy {text!r}")
            if not value.strip():
                raise ValueError(f"bad policy part {part.strip()!r}: empty dtype")
            values[field] = value.strip()
        autocast = _ON.get(values.pop("autocast", "off").lower())
        if autocast is None:
            raise ValueError(f"bad policy {text!r}: autocast= takes on or off")
        params = values.get("params", "float32")  # noqa: DTL102 (jmp: unnamed parts default to float32)
        compute = values.get("compute", params)
        output = values.get("output", "compute" if autocast else params)
        try:
            return cls(params, compute, output, autocast)
        except ValueError as exc:
            raise ValueError(f"bad policy {text!r}: {exc}") from None

    @classmethod
    def coerce(cls, policy: Policy | str) -> Policy:
        """A ``Policy`` as is, or a text parsed with :meth:`parse`."""
        return policy if isinstance(policy, Policy) else cls.parse(policy)

    def expected_output(self, input_dtypes: set[str] | frozenset[str], default: str) -> str:
        """The dtype floating outputs must have, given the call's floating input dtypes.

        ``default`` is the framework's default float dtype; it is also what ``"input"``
        expects when the call has no floating input. Raises ``ValueError`` naming the
        dtypes when ``output="input"`` and the floating inputs disagree.
        """
        if self.output == "compute":
            return self.compute
        if self.output == "default":
            return default
        if self.output == "input":
            if len(input_dtypes) > 1:
                raise ValueError("output='input' but the floating inputs have mixed dtypes: "
                                 + ", ".join(sorted(input_dtypes)))
            return next(iter(input_dtypes)) if input_dtypes else default
        return self.output

    def accepts_output(self, name: str, expected: str) -> bool:
        """Whether a floating output of the outermost call in dtype ``name`` is fine:
        ``expected`` (from :meth:`expected_output`), or float32 under an autocast policy,
        which leaves outputs as computed."""
        return name == expected or (self.autocast and name == "float32")

    def __str__(self) -> str:
        text = f"params={self.params},compute={self.compute},output={self.output}"
        return text + ",autocast=on" if self.autocast else text
