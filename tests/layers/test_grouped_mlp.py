import keras
import numpy as np
import pytest

from keras_msets import layers
from keras_msets import testing


def _numpy_mlp(x, weights, groups, activation=np.tanh, table=False):
    """Float64 reference: row r goes through the MLP of group groups[r]."""
    weights = [
        np.asarray(keras.ops.convert_to_numpy(w), "float64") for w in weights
    ]
    rows = []
    for r, g in enumerate(groups):
        if table:
            h = np.maximum(weights[0][g][x[:, r]], 0)
            params = weights[1:]
        else:
            h = x[:, r].astype("float64")
            params = weights
        pairs = list(zip(params[::2], params[1::2], strict=True))
        for k, (kernel, bias) in enumerate(pairs):
            h = h @ kernel[g] + bias[g]
            h = activation(h) if k == len(pairs) - 1 else np.maximum(h, 0)
        rows.append(h)
    return np.stack(rows, axis=1)


class GroupedMLPTest(testing.TestCase):
    def test_layer_basics(self):
        x = np.random.default_rng(0).normal(size=(2, 3, 5)).astype("float32")
        self.run_layer_test(
            layers.GroupedMLP,
            {"units": [8, 4], "num_groups": 3, "input_dim": 5},
            x,
            expected_output_shape=(2, 3, 4),
            expected_num_trainable_weights=4,
        )
        self.run_layer_test(
            layers.GroupedMLP,
            {"units": [6], "num_groups": 1, "input_dim": 5},
            x,
            expected_output_shape=(2, 3, 6),
            expected_num_trainable_weights=2,
        )

    def test_matches_numpy_for_every_grouping(self):
        rng = np.random.default_rng(1)
        x = rng.normal(size=(4, 5, 3)).astype("float32")
        mlp = layers.GroupedMLP(
            [6, 2], num_groups=7, input_dim=3, output_activation="tanh"
        )
        mlp.build()
        for w in mlp.weights:  # non-zero biases
            w.assign(rng.normal(size=w.shape).astype("float32"))
        for groups in (
            np.full(5, 4),  # one group for every row: a plain MLP
            np.arange(2, 7),  # consecutive groups: a slice of the weights
            np.array([6, 0, 6, 3, 1]),  # any assignment: a gather
        ):
            got = mlp.apply_groups(x, groups)
            self.assertAllClose(
                got, _numpy_mlp(x, mlp.weights, groups), atol=1e-5
            )

    def test_id_inputs_and_learned_padding(self):
        rng = np.random.default_rng(2)
        ids = rng.integers(0, 3, size=(4, 3)).astype("int32")
        mlp = layers.GroupedMLP(
            [5, 2],
            num_groups=4,
            vocabulary_size=3,
            pad_to=4,
            output_activation="tanh",
        )
        out = mlp(ids)
        self.assertEqual(tuple(out.shape), (4, 4, 2))
        # The padding position reads its own table row, id 3.
        padded = np.concatenate([ids, np.full((4, 1), 3, "int32")], 1)
        expected = _numpy_mlp(padded, mlp.weights, np.arange(4), table=True)
        self.assertAllClose(out, expected, atol=1e-5)
        self.assertEqual(mlp.table.shape, (4, 4, 5))
        with pytest.raises(ValueError, match="at most pad_to=4"):
            mlp(np.zeros((2, 5), "int32"))

    def test_saving(self):
        x = np.random.default_rng(3).normal(size=(2, 3, 4)).astype("float32")
        inputs = keras.Input((3, 4))
        mlp = layers.GroupedMLP([6, 2], num_groups=3, input_dim=4)
        model = keras.Model(inputs, mlp(inputs))
        self.run_model_saving_test(model, x)
        self.run_weights_roundtrip_test(model, x)

    def test_bad_arguments(self):
        cases = [
            (dict(units=[], input_dim=2), "units"),
            (dict(units=[0], input_dim=2), "units"),
            (dict(units=[2], num_groups=0, input_dim=2), "num_groups"),
            (dict(units=[2], input_dim=-1), "input_dim"),
            (dict(units=[2], vocabulary_size=0), "vocabulary_size"),
            (dict(units=[2]), "One of `input_dim`"),
            (dict(units=[2], input_dim=2, pad_to=4), "needs id inputs"),
            (dict(units=[2], vocabulary_size=3, pad_to=0), "pad_to"),
        ]
        for kwargs, match in cases:
            with pytest.raises(ValueError, match=match):
                layers.GroupedMLP(**kwargs)
        mlp = layers.GroupedMLP([2], num_groups=3, input_dim=2)
        with pytest.raises(ValueError, match="apply_groups"):
            mlp(np.zeros((1, 2, 2), "float32"))
        with pytest.raises(ValueError, match=r"lie in \[0, 3\)"):
            mlp.apply_groups(np.zeros((1, 2, 2), "float32"), [0, 3])

    def test_token_ids_are_checked(self):
        # Id 3 is the learned padding row, never an input; a negative id
        # would wrap around to another row.
        mlp = layers.GroupedMLP([2], num_groups=4, vocabulary_size=3, pad_to=4)
        for bad, low, high in (([[0, 1, 3]], 0, 3), ([[0, -1, 2]], -1, 2)):
            with pytest.raises(ValueError) as info:
                mlp(np.array(bad, "int32"))
            assert (
                "`inputs` must hold token ids in [0, 2] (vocabulary_size=3). "
                f"Received: inputs with ids from {low} to {high}"
            ) in str(info.value)
        with pytest.raises(TypeError, match="`inputs` must hold integer"):
            mlp.apply_groups(np.array([[0.0, 1.9, 2.0]]), np.arange(4))
