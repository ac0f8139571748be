"""adcheck check on a layer without --inputs: the shapes its first layer takes.

Before, every module whose first layer is not a 4-feature one (a Linear(10,
5), BatchNorm1d(5), a CNN, an embedding) ran on none of the default sets and
ended in three ERRORs from a `randn(3)` fallback, exit status 1. Torch is the
judge of the shapes here: each guessed set must run in the module it was
made for (test_every_torch_layer_kind_runs_on_its_first_guess), and the
command must then check it.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from cli_paths import LAYER_MODELS, USER_MODULES  # noqa: E402

from adcheck.cli.commands.layer_inputs import layer_inputs  # noqa: E402
from adcheck.runner.spec import build, parse  # noqa: E402

nn = torch.nn


@pytest.mark.parametrize("name, first_shape", [
    ("batchnorm", [3, 5]),
    ("mlp", [3, 10]),
    ("mnist_like", [2, 1, 28, 28]),      # the smallest image (9 x 9) is refused by the Linear
    ("LanguageModel", [3, 4]),
    ("attention", [5, 3, 4]),
    ("encoder_layer", [5, 3, 4]),
    ("HeadFirst", [3, 5]),               # the next layer's shape when the first's is refused
])
def test_a_layer_is_checked_on_inputs_of_its_first_layers_shape(run_json, name, first_shape):
    result, doc = run_json("check", f"{LAYER_MODELS}:{name}", "--check", "reverse")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert [r["status"] for r in doc["results"]] == ["passed"]
    (layout,) = doc["settings"]["layouts"]
    assert layout["inputs"][0][0] == first_shape


def test_a_real_layer_is_not_warned_that_complex_inputs_fail(run):
    result = run("check", f"{LAYER_MODELS}:mlp", "--check", "reverse")
    assert result.exit_code == 0
    assert "complex" not in result.stderr


def test_a_wrong_user_layer_is_found_without_inputs(run):
    # (its 3 x 3 weight, the rows it multiplies: no attribute names its width)
    result = run("check", f"{USER_MODULES}:WrongLinear", "--check", "reverse", "-q")
    assert result.exit_code == 1
    assert "input 1 (weight)" in result.stdout and "2 times numerical" in result.stdout


def test_a_module_that_runs_on_no_default_set_exits_2_saying_what_each_raised(run):
    result = run("check", f"{LAYER_MODELS}:TwoWidths")
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "TwoWidths runs on none of the default inputs" in message
    assert "randn(3, 3); randn(3, 3): RuntimeError (mat1 and mat2 shapes cannot be " \
           "multiplied (3x3 and 5x2))" in message
    assert "give inputs it takes with --inputs" in message
    assert "Traceback" not in result.stderr


def test_a_function_of_vectors_still_runs_on_the_one_row_fallback(run_json):
    result, doc = run_json("check", f"{LAYER_MODELS}:dot", "--engine", "torch",
                           "--check", "reverse")
    assert result.exit_code == 0
    assert doc["settings"]["inputs"] == ["randn(3); randn(3)"]
    assert "the default inputs cannot show a row-wise bug" in result.stderr


def _torch_layers():
    return {
        "Linear": (nn.Linear(6, 2), 1), "Bilinear": (nn.Bilinear(3, 4, 2), 2),
        "Conv1d": (nn.Conv1d(3, 2, 5, dilation=2), 1), "Conv2d": (nn.Conv2d(2, 3, (3, 5)), 1),
        "Conv3d": (nn.Conv3d(2, 1, 3), 1), "ConvTranspose2d": (nn.ConvTranspose2d(3, 2, 3, 2), 1),
        "BatchNorm1d": (nn.BatchNorm1d(5), 1), "BatchNorm2d": (nn.BatchNorm2d(3), 1),
        "BatchNorm3d": (nn.BatchNorm3d(2), 1), "InstanceNorm1d": (nn.InstanceNorm1d(3), 1),
        "InstanceNorm2d": (nn.InstanceNorm2d(3), 1), "GroupNorm": (nn.GroupNorm(2, 6), 1),
        "LayerNorm": (nn.LayerNorm((4, 5)), 1), "RMSNorm": (nn.RMSNorm(7), 1),
        "Embedding": (nn.Embedding(9, 3), 1), "EmbeddingBag": (nn.EmbeddingBag(9, 3), 1),
        "RNN": (nn.RNN(4, 3), 1), "LSTM batch_first": (nn.LSTM(4, 3, batch_first=True), 1),
        "GRU": (nn.GRU(4, 3, num_layers=2), 1), "GRUCell": (nn.GRUCell(4, 3), 1),
        "LSTMCell": (nn.LSTMCell(4, 3), 1),
        "MultiheadAttention kdim": (nn.MultiheadAttention(4, 2, kdim=3, vdim=5), 3),
        "MultiheadAttention batch_first": (nn.MultiheadAttention(4, 2, batch_first=True), 3),
        "TransformerEncoderLayer": (nn.TransformerEncoderLayer(4, 2, 8), 1),
        "TransformerDecoderLayer": (nn.TransformerDecoderLayer(4, 2, 8), 2),
        "Transformer": (nn.Transformer(4, 2, 1, 1, 8), 2),
        "Sequential": (nn.Sequential(nn.Flatten(), nn.Linear(12, 2)), 1),
    }


@pytest.mark.parametrize("kind", sorted(_torch_layers()))
def test_every_torch_layer_kind_runs_on_its_first_guess(kind):
    layer, count = _torch_layers()[kind]
    layer = layer.double()   # (the command checks copies of the parameters in float64)
    sets = layer_inputs(layer, count)
    assert sets and all(len(specs) == count for specs in sets)
    ran = []
    for specs in sets:
        inputs = build(parse("; ".join(specs)), "torch", np.random.default_rng(0))
        try:
            layer(*inputs)
        except Exception:   # noqa: BLE001 - torch refuses shapes with several kinds
            continue
        ran.append(specs)
    # torch takes the first guess (the Sequential flattening 12 features: 3 x 12)
    assert ran and ran[0] == sets[0]


def test_a_refengine_layer_gets_its_width_too():
    from adcheck.refengine import nn as rnn
    assert layer_inputs(rnn.Sequential(rnn.Linear(6, 2)), 1) == [["randn(3, 6)"]]


def test_a_module_of_no_known_layer_and_no_weight_gets_no_guess():
    class Scale(nn.Module):
        def forward(self, x):
            return 2 * x
    assert layer_inputs(Scale(), 1) == []


def test_harvest_runs_a_model_without_inputs_on_its_first_layers_shape(run_json):
    # before: exit 2, "--harvest needs the model's inputs"; the model is float32 as built
    result, doc = run_json("check", f"{LAYER_MODELS}:SwishNet", "--harvest", "--check",
                           "reverse")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "--harvest runs SwishNet on randn(3, 6) float32" in " ".join(result.stderr.split())
    assert {r["op"] for r in doc["results"]} == {"(root):Swish", "SwishNet"}
    assert all(r["status"] == "passed" for r in doc["results"])


@pytest.mark.parametrize("how", ["direct", "function", "harvest"])
def test_a_jvp_that_raises_not_implemented_is_a_skip_not_an_error(run_json, how):
    # (torch's own default jvp raises NotImplementedError: a placeholder says the same)
    args = {"direct": (f"{LAYER_MODELS}:Swish",),
            "function": (f"{LAYER_MODELS}:swish", "--engine", "torch"),
            "harvest": (f"{LAYER_MODELS}:SwishNet", "--harvest")}[how]
    result, doc = run_json("check", *args, "--check", "reverse,forward", "--inputs",
                           "randn(3, 6)" if how != "harvest" else "randn(3, 6) float32")
    assert result.exit_code == 0, result.stdout
    forward = [r for r in doc["results"] if r["check"] == "forward"]
    assert forward and all(r["status"] == "skipped" for r in forward)
    assert any("NotImplementedError" in r["message"] for r in forward)


@pytest.mark.parametrize("pad", [0, -1])
def test_an_embeddings_default_indices_avoid_its_padding_row(pad):
    # torch gives that row no gradient by design: indices meeting it would fail the weight
    layer = nn.Embedding(10, 3, padding_idx=pad)
    ((spec,),) = layer_inputs(layer, 1)
    (indices,) = build(parse(spec), "torch", np.random.default_rng(0))
    assert indices.dtype == torch.int64 and indices.shape == (3, 4)
    assert int(indices.min()) >= 0 and int(indices.max()) <= 9
    assert layer.padding_idx not in indices.tolist()[0] + indices.tolist()[1] + \
        indices.tolist()[2]
