"""Policy parsing and the three output conventions."""

import pytest

from dtype_lint.runtime import Policy


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("params=float32,compute=bfloat16,output=float32", ("float32", "bfloat16", "float32")),
        ("p=f32,c=bf16,o=f16", ("float32", "bfloat16", "float16")),
        (" P = F32 , C = BF16 ", ("float32", "bfloat16", "float32")),
        ("float32", ("float32", "float32", "float32")),
        ("bfloat16", ("bfloat16", "bfloat16", "bfloat16")),
        ("float16", ("float16", "float16", "float16")),
        ("mixed_bfloat16", ("float32", "bfloat16", "float32")),
        ("mixed_float16", ("float32", "float16", "float32")),
        ("c=bf16,o=input", ("float32", "bfloat16", "input")),
        ("c=bf16,o=default", ("float32", "bfloat16", "default")),
        ("c=f16,o=compute", ("float32", "float16", "compute")),
        ("bf16", ("bfloat16", "bfloat16", "bfloat16")),
    ],
)
def test_parse(text, expected):
    policy = Policy.parse(text)
    assert (policy.params, policy.compute, policy.output) == expected
    assert Policy.parse(str(policy)) == policy


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("p=f32,x=bf16", "x=bf16"),
        ("params=int32", "int32"),
        ("compute=bf17", "bf17"),
        ("p=f32,p=f16", "params given twice"),
        ("p=", "empty dtype"),
        ("o=inputs", "inputs"),
        ("mixed_int8", "mixed_int8"),
    ],
)
def test_bad_text_names_the_bad_part(text, named):
    with pytest.raises(ValueError, match=named):
        Policy.parse(text)


def test_framework_dtypes_are_kept_as_names():
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    policy = Policy(params=torch.float32, compute=np.float16, output="INPUT")
    assert (policy.params, policy.compute, policy.output) == ("float32", "float16", "input")


def test_expected_output():
    assert Policy.parse("c=bf16,o=compute").expected_output({"float32"}, "float32") == "bfloat16"
    assert Policy.parse("c=bf16,o=default").expected_output({"float16"}, "float64") == "float64"
    assert Policy.parse("c=bf16,o=input").expected_output({"float16"}, "float32") == "float16"
    assert Policy.parse("c=bf16,o=input").expected_output(set(), "float32") == "float32"
    with pytest.raises(ValueError, match="bfloat16, float32"):
        Policy.parse("c=bf16,o=input").expected_output({"float32", "bfloat16"}, "float32")
