"""The autocast report on Hugging Face and timm models built from tiny configs (skipped when absent)."""

import warnings

import pytest

from dtype_lint.runtime import guard

torch = pytest.importorskip("torch")


def _report(model, inputs, policy):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # library deprecation notices
        with guard(model, policy, on_violation="record") as g:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                model(*inputs)
    return g.violations


def test_llama_under_autocast():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2)
    model = transformers.LlamaForCausalLM(config).eval()
    ids = (torch.randint(0, 1000, (1, 16)),)
    assert _report(model, ids, "autocast_bfloat16") == []
    found = _report(model, ids, "mixed_bfloat16")
    assert [(v.code, v.module_path) for v in found] == [("DTL191", "model.embed_tokens"), ("DTL193", "(root)")]
    assert found[1].message == "output 'logits' is bfloat16, expected float32"
    assert len(found[0].downstream) > 5


def test_vit_tiny_under_autocast():
    timm = pytest.importorskip("timm")
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False).eval()
    image = (torch.randn(1, 3, 224, 224),)
    assert _report(model, image, "autocast_bfloat16") == []
    found = _report(model, image, "mixed_bfloat16")
    assert [(v.code, v.module_path) for v in found] == [("DTL191", "(root)"), ("DTL193", "(root)")]
    assert found[0].message.startswith("float32 activations made by VisionTransformer's own code")
