"""Per-rule options read from ``[tool.dtype-lint]``, with their defaults and types."""

from __future__ import annotations

import dataclasses

# Function names whose body is an explicit casting API: casting there is the point. Here,
# not with the rules, because the mypy plugin's hooks test them without importing LibCST.
CAST_HELPER_PATTERNS = ("to_bf16", "to_fp16", "to_fp32", "to_f16", "to_f32", "to_half", "cast*", "_cast*",
                        "convert*fp16*", "convert*bf16*", "convert*half*", "convert*dtype*", "convert*precision*",
                        "_convert*fp16*", "_convert*bf16*", "_convert*half*", "half", "bfloat16", "double", "float",
                        "_apply")


@dataclasses.dataclass(frozen=True)
class Options:
    """Options that change what the rules look for; keys are the TOML spellings."""

    # F1: names of storage dtypes (parameters, optimizer state), whose float32 is
    # deliberate: keeping them in float32 is what mixed precision asks for.
    param_dtype_names: tuple[str, ...] = (
        "param_dtype", "params_dtype", "parameter_dtype", "weight_dtype", "weights_dtype",
        "master_dtype", "master_weights_dtype", "storage_dtype", "momentum_dtype", "variance_dtype",
        "mu_dtype", "nu_dtype", "accumulator_dtype", "state_dtype", "optimizer_state_dtype",
        "precond_dtype", "preconditioner_dtype", "reduce_dtype", "buffer_dtype",
    )
    # F1: names that hold a computation dtype, besides `dtype` itself.
    compute_dtype_names: tuple[str, ...] = (
        "dtype", "compute_dtype", "computation_dtype", "activation_dtype", "act_dtype",
        "output_dtype", "out_dtype", "result_dtype", "attention_dtype", "attn_dtype",
        "matmul_dtype", "dtype_compute",
    )
    # F1: functions that are user-facing entry points, where a float32 default is the
    # user's choice rather than a layer's (`from_*`: alternate constructors, such as
    # `from_pretrained`, are how users build an object).
    entry_point_functions: tuple[str, ...] = (
        "from_*", "main", "cli_main", "parse_args",
    )
    # F1: classes whose constructor is a user-facing entry point (a model wrapper).
    entry_point_classes: tuple[str, ...] = ("*PreTrainedModel",)
    # F1: functions, classes and modules (file names) on the data side (loading,
    # collation, augmentation, sampling, annotations, pre- and post-processing of
    # inputs, and image/video/audio processors, which turn media into model inputs),
    # matched lower-cased: their float32 is the data's, not a layer's.
    data_side_names: tuple[str, ...] = (
        "*loader*", "*dataset*", "*collat*", "*converter*", "*iterator*", "*sampler*", "*random*",
        "*rng*", "*augment*", "*preprocess*", "*reader*", "*annotation*", "*processing*",
        "*feature_extract*", "*loading*", "*image*processor*", "*video*processor*", "*audio*processor*",
        "*logit*",  # sampling's side: logits processors and warpers work on the model's output
    )
    # F2: extra pickling sinks, "qualified.name:argument" (argument: a keyword or a
    # 0-based position).
    extra_pickling_sinks: tuple[str, ...] = ()
    # F2: wrappers that store an output/input transform on the wrapped model.
    wrapper_transforms: tuple[str, ...] = (
        "*Module:output_transform", "*Module:input_transform",
        "*Wrapper:output_transform", "*Wrapper:input_transform",
        "*Model:output_transform", "*Model:input_transform",
    )
    # F2: classes whose instances are transforms, processors, collators or readers (the
    # per-item loaders a dataset calls): datasets and loaders hold them, so they are
    # pickled for every worker.
    transform_classes: tuple[str, ...] = (
        "*Processor", "*Transform", "*Transforms", "*Collator", "*Collate", "*Augmentation", "*Reader",
    )
    # F2: calls that add a stage to a dataset pipeline, which keeps the stage's callable
    # and is pickled for every loader worker.
    pipeline_stages: tuple[str, ...] = ("webdataset.*",)
    # F2/F3: extra base classes that make a class a torch module.
    module_bases: tuple[str, ...] = ()
    # F3: receiver names taken to be modules when nothing else is known about them.
    module_names: tuple[str, ...] = ("model", "module", "net", "network", "*_model", "model_*")
    # F3: helpers that cast a whole model or parameter tree when called.
    cast_helpers: tuple[str, ...] = (
        "convert_weights_to_lp", "convert_weights_to_fp16", "convert_network", "to_fp16",
        "to_bf16", "cast_tree",
    )
    # F3: functions that only run a model for inference or evaluation, matched
    # lower-cased; a cast there does not reach training.
    inference_functions: tuple[str, ...] = (
        "*infer*", "eval*", "*_eval*", "*evaluat*", "predict*", "*_predict*", "*prediction*",
        "export*", "*_export*",
    )
    # The oldest Python the linted code runs on (`target-version`, else the lower bound
    # of `requires-python`): fixes write `X | None` from 3.10 on, `Optional[X]` before.
    target_version: tuple[int, int] = (3, 10)
    # The lowest confidence shown (core.confidence): `low` is the audit mode.
    min_confidence: str = "medium"


# The rule options proper, lists of names; `target-version` and `min-confidence` are read
# apart (a version, a level).
OPTION_KEYS = {f.name.replace("_", "-"): f.name for f in dataclasses.fields(Options)
               if f.name not in ("target_version", "min_confidence")}
