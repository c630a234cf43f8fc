"""How much a dtype guard costs, and proof that it costs nothing when inactive.

For a 6-layer ``torch.nn.TransformerEncoder`` (d_model 256, batch 8, sequence 128, CPU),
in inference (eval, no_grad: torch's fused fast path) and as a training forward
(grad enabled, every submodule called), and for a 6-layer Flax encoder under
``jax.jit`` after its first call, it prints:

* guarded / unguarded: the forward with a guard active over the same forward without;
* unguarded after a guard / never guarded: the forward of the model once a guard
  was used on it and exited, over an identical copy that was never guarded;
* after import / before import: the never-guarded copy once ``dtype_lint.runtime``
  is imported and guards were used, over the same copy timed before it was imported.

Every number is a median over repeats in which every variant runs a block of calls
in turn (the order alternating between repeats), so drift in machine load hits all
variants alike; only the before-import blocks necessarily run earlier.

Then, for real third-party models built from configs (no download): timm's resnet18
and vit_tiny, Hugging Face's Bert and Llama at tiny sizes, each in three modes (float32
under ``"float32"``, ``torch.autocast`` bf16 under ``"autocast_bfloat16"``, the model
cast to bf16 under ``"bfloat16"``), it prints guarded / unguarded for one forward pass
(median of ``--model-repeats`` interleaved pairs) and the guard's cost per module call.
A model whose package is absent is skipped (``pip install 'dtype-lint[bench]'``).
Run: ``python benchmarks/guard_overhead.py [--repeats N] [--model-repeats N] [--only models|encoder]``.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
import warnings

D_MODEL, HEADS, FF, LAYERS, BATCH, SEQ = 256, 8, 1024, 6, 8, 128


def _block_time(call, calls: int, clock=time.perf_counter) -> float:
    start = clock()
    for _ in range(calls):
        call()
    return (clock() - start) / calls


def _interleaved(variants: dict, repeats: int, calls: int, clock=time.perf_counter) -> dict[str, float]:
    """Median seconds per call of each variant; ``variants`` maps name -> (enter, call, exit).

    The order of the variants alternates between repeats (ABC, CBA, ...) so that a
    trend in machine load does not favour the variant that always runs first.
    """
    samples: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    for repeat in range(repeats):
        for name in order if repeat % 2 == 0 else reversed(order):
            enter, call, leave = variants[name]
            enter()
            try:
                samples[name].append(_block_time(call, calls, clock))
            finally:
                leave()
    return {name: statistics.median(values) for name, values in samples.items()}


def _nothing() -> None:
    return None


def torch_models():
    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
    x = torch.randn(BATCH, SEQ, D_MODEL)
    return torch, model, x


def torch_calls(torch, model, x):
    def inference():
        with torch.no_grad():
            model.eval()(x)

    def training():
        model.train()(x)

    return {"inference": inference, "training forward": training}


def flax_setup():
    import jax
    import flax.linen as nn

    class Layer(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.LayerNorm()(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=HEADS)(h, h)
            h = nn.LayerNorm()(x)
            return x + nn.Dense(D_MODEL)(nn.gelu(nn.Dense(FF)(h)))

    class Encoder(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(LAYERS):
                x = Layer()(x)
            return x

    model = Encoder()
    x = jax.random.normal(jax.random.key(0), (BATCH, SEQ, D_MODEL))
    variables = model.init(jax.random.key(1), x)
    apply = jax.jit(model.apply)

    def call():
        apply(variables, x).block_until_ready()

    call()  # compile: everything below measures calls after the first
    return model, call


def hook_cost(torch, guard, repeats: int) -> tuple[float, float]:
    """Seconds per module call without and with a guard, on 100 tiny Linear layers.

    With almost no arithmetic this isolates what the hooks cost per call, which load
    noise on a big forward hides; the thread's CPU clock keeps other processes out.
    """
    chain = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(100)])
    x = torch.randn(1, 4)
    active = guard(chain, "float32", on_violation="record")
    times = _interleaved({"off": (_nothing, lambda: chain(x), _nothing),
                          "on": (active.__enter__, lambda: chain(x), active.close)}, repeats, 20,
                         time.thread_time)
    return times["off"] / 101, times["on"] / 101


class _noop_guard:
    """What torch itself charges for one forward hook per module: the floor for any guard."""

    def __init__(self, model, policy, on_violation):
        self.model = model
        self.handles = []

    def __enter__(self):
        self.handles = [m.register_forward_hook(lambda *_: None, with_kwargs=True) for m in self.model.modules()]
        return self

    def close(self):
        for handle in self.handles:
            handle.remove()


def _module_calls(torch, call) -> int:
    count = [0]

    def counter(*_):
        count[0] += 1

    handle = torch.nn.modules.module.register_module_forward_hook(counter)
    try:
        call()
    finally:
        handle.remove()
    return count[0]


def third_party_models(torch) -> dict:
    """name -> (model in eval mode, example inputs), for the packages that are installed."""
    models = {}
    try:
        import timm
    except ImportError:
        print("timm absent: resnet18 and vit_tiny skipped")
    else:
        torch.manual_seed(0)
        image = torch.randn(1, 3, 224, 224)
        models["resnet18"] = (timm.create_model("resnet18", pretrained=False), (image,))
        models["vit_tiny"] = (timm.create_model("vit_tiny_patch16_224", pretrained=False), (image,))
    try:
        import transformers
    except ImportError:
        print("transformers absent: Bert and Llama skipped")
    else:
        ids = torch.randint(0, 1000, (1, 64))
        bert = transformers.BertConfig(vocab_size=1000, hidden_size=128, intermediate_size=512,
                                       num_hidden_layers=4, num_attention_heads=4)
        llama = transformers.LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=512,
                                         num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2)
        models["bert tiny"] = (transformers.BertModel(bert), (ids,))
        models["llama tiny"] = (transformers.LlamaForCausalLM(llama), (ids,))
    return {name: (model.eval(), inputs) for name, (model, inputs) in models.items()}


def _mode_call(torch, model, inputs, mode: str):
    if mode == "autocast":
        def call():
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                model(*inputs)
    else:
        def call():
            with torch.no_grad():
                model(*inputs)
    return call


MODES = {"fp32": "float32", "autocast": "autocast_bfloat16", "bf16": "bfloat16"}


def model_table(torch, guard, repeats: int) -> None:
    """guarded / unguarded per model and mode, and the cost per module call.

    Timed on one torch thread with the thread's CPU clock, so that other processes
    competing for the cores (a shared machine) stretch neither variant's time.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, CPU time of the calling thread; "
          f"median of {repeats} interleaved guarded/unguarded forward passes")
    print(f"{'model':<12} {'mode':<9} {'unguarded ms':>12} {'guarded ms':>10} {'ratio':>6} "
          f"{'calls':>6} {'us/call':>7} {'findings':>8}")
    for name, (model, inputs) in third_party_models(torch).items():
        for mode, policy in MODES.items():
            if mode == "bf16":
                model = model.to(torch.bfloat16)  # noqa: DTL303 (the pure-bf16 mode under test)
                inputs = tuple(t.to(torch.bfloat16) if t.is_floating_point() else t for t in inputs)
            call = _mode_call(torch, model, inputs, mode)
            call()
            active = guard(model, policy, on_violation="record")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                times = _interleaved({"off": (_nothing, call, _nothing),
                                      "on": (active.__enter__, call, active.close)}, repeats, 1,
                                     time.thread_time)
            calls = _module_calls(torch, call)
            ratio = times["on"] / times["off"]
            per_call = (times["on"] - times["off"]) / calls * 1e6
            print(f"{name:<12} {mode:<9} {times['off'] * 1e3:>12.2f} {times['on'] * 1e3:>10.2f} "
                  f"{ratio:>6.3f} {calls:>6} {per_call:>7.2f} {len(active.violations):>8}")
    torch.set_num_threads(threads)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--calls", type=int, default=2, help="calls per timed block")
    parser.add_argument("--model-repeats", type=int, default=60)
    parser.add_argument("--only", choices=("models", "encoder"))
    args = parser.parse_args(argv)
    assert "dtype_lint.runtime" not in sys.modules
    if args.only == "models":
        import torch

        from dtype_lint.runtime import guard

        model_table(torch, guard, args.model_repeats)
        return 0

    torch, model, x = torch_models()
    # An identical copy that is never guarded: the interleaved reference for "no
    # cost once the guard is gone".
    never = copy.deepcopy(model)
    calls = torch_calls(torch, model, x)
    never_calls = torch_calls(torch, never, x)
    for call in [*calls.values(), *never_calls.values()]:
        call()  # warm up allocator and kernels
    try:
        flax_model, flax_call = flax_setup()
    except ImportError:
        flax_model = flax_call = None
    baseline = {name: (_nothing, call, _nothing) for name, call in never_calls.items()}
    if flax_call is not None:
        baseline["flax jit"] = (_nothing, flax_call, _nothing)
    before = _interleaved(baseline, args.repeats, args.calls)

    from dtype_lint.runtime import guard

    guards = {name: guard(model, "float32", on_violation="record") for name in calls}
    variants = {}
    for name, call in calls.items():
        with guards[name]:  # used once and removed before any unguarded timing
            call()
        variants[f"{name} never guarded"] = (_nothing, never_calls[name], _nothing)
        variants[f"{name} unguarded"] = (_nothing, call, _nothing)
        variants[f"{name} guarded"] = (guards[name].__enter__, call, guards[name].close)
    if flax_call is not None:
        guards["flax jit"] = guard(flax_model, "float32", on_violation="record")
        with guards["flax jit"]:
            flax_call()
        variants["flax jit never guarded"] = (_nothing, flax_call, _nothing)
        variants["flax jit unguarded"] = (_nothing, flax_call, _nothing)
        variants["flax jit guarded"] = (guards["flax jit"].__enter__, flax_call, guards["flax jit"].close)
    after = _interleaved(variants, args.repeats, args.calls)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{LAYERS} layers, d_model {D_MODEL}, batch {BATCH}, sequence {SEQ}; "
          f"medians of {args.repeats} interleaved repeats x {args.calls} calls")
    for name in guards:
        unguarded = after[f"{name} unguarded"]
        guarded = after[f"{name} guarded"]
        print(f"{name}: unguarded {unguarded * 1e3:.2f} ms, guarded {guarded * 1e3:.2f} ms")
        print(f"    guarded / unguarded                           {guarded / unguarded:.3f}")
        print(f"    unguarded after a guard / never guarded       "
              f"{unguarded / after[f'{name} never guarded']:.3f}  (interleaved)")
        print(f"    unguarded after import / before import        "
              f"{after[f'{name} never guarded'] / before[name]:.3f}  (sequential blocks: load drift shows here)")
    off, on = hook_cost(torch, guard, args.repeats * 3)
    floor = hook_cost(torch, _noop_guard, args.repeats * 3)
    print(f"hook cost: {(on - off) * 1e6:.1f} us per module call "
          f"({off * 1e6:.1f} us unguarded, {on * 1e6:.1f} us guarded); "
          f"a forward hook that does nothing costs {(floor[1] - floor[0]) * 1e6:.1f} us here")
    for name, call in calls.items():
        n = _module_calls(torch, call)
        estimate = 1 + n * (on - off) / after[f"{name} unguarded"]
        print(f"    {name}: {n} module calls per forward -> guarded / unguarded from hook cost {estimate:.4f}")
    violations = sum(len(g.violations) for g in guards.values())
    print(f"violations seen (expected none for a float32 model): {violations}")
    if args.only != "encoder":
        model_table(torch, guard, args.model_repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
