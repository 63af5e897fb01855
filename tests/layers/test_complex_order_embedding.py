import keras
import numpy as np
import pytest

from keras_msets import layers
from keras_msets import testing

SCHEMES = ("none", "word", "dimension")


def _ids(batch=3, length=6, vocab=7, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(batch, length))
    ids[0, 4:] = 0
    ids[1, 2:] = 0
    return ids.astype("int32")


def _expand(value, sharing, ids, dim):
    """numpy: a parameter under a sharing scheme, looked up for `ids`."""
    if sharing == "none":
        return value[ids]
    if sharing == "word":
        return np.broadcast_to(value, ids.shape + (dim,))
    return np.broadcast_to(value[ids][..., None], ids.shape + (dim,))


def _reference(ids, frequency, amplitude, phase, schemes, dim):
    """numpy complex128 of Eq. 5: r exp(i (omega pos + theta)), pos = k + 1."""
    frequency_sharing, amplitude_sharing = schemes
    omega = _expand(frequency.astype("float64"), frequency_sharing, ids, dim)
    r = _expand(amplitude.astype("float64"), amplitude_sharing, ids, dim)
    theta = 0.0 if phase is None else phase.astype("float64")[ids]
    pos = np.arange(1, ids.shape[1] + 1, dtype="float64")[None, :, None]
    z = r * np.exp(1j * (omega * pos + theta))
    return np.concatenate([z.real, z.imag], -1)


def _shape(sharing, vocab, dim):
    return {"none": (vocab, dim), "word": (dim,), "dimension": (vocab,)}[
        sharing
    ]


class ComplexOrderEmbeddingTest(testing.TestCase):
    def test_layer_basics(self):
        ids = _ids()
        for frequency_sharing, amplitude_sharing, phase in (
            ("none", "none", True),
            ("word", "dimension", False),
            ("dimension", "word", False),
        ):
            self.run_layer_test(
                layers.ComplexOrderEmbedding,
                {
                    "input_dim": 7,
                    "output_dim": 4,
                    "frequency_sharing": frequency_sharing,
                    "amplitude_sharing": amplitude_sharing,
                    "use_initial_phase": phase,
                    "mask_zero": True,
                },
                ids,
                expected_output_shape=(3, 6, 8),
                expected_num_trainable_weights=3 if phase else 2,
                expected_num_non_trainable_weights=0,
                supports_masking=True,
                expected_output_mask=ids != 0,
            )

    def test_parameter_counts_per_sharing_scheme(self):
        vocab, dim = 11, 5
        sizes = {"none": vocab * dim, "word": dim, "dimension": vocab}
        for frequency_sharing in SCHEMES:
            for amplitude_sharing in SCHEMES:
                for phase in (False, True):
                    layer = layers.ComplexOrderEmbedding(
                        vocab,
                        dim,
                        frequency_sharing=frequency_sharing,
                        amplitude_sharing=amplitude_sharing,
                        use_initial_phase=phase,
                    )
                    layer.build((None, None))
                    expected = sizes[frequency_sharing]
                    expected += sizes[amplitude_sharing]
                    expected += vocab * dim if phase else 0
                    self.assertEqual(layer.count_params(), expected)
                    self.assertEqual(
                        tuple(layer.frequency.shape),
                        _shape(frequency_sharing, vocab, dim),
                    )
                    self.assertEqual(
                        tuple(layer.amplitude.shape),
                        _shape(amplitude_sharing, vocab, dim),
                    )

    def test_matches_numpy_complex128(self):
        vocab, dim = 7, 3
        ids = _ids(vocab=vocab)
        rng = np.random.default_rng(1)
        for schemes in (
            ("none", "none"),
            ("word", "dimension"),
            ("dimension", "word"),
        ):
            for phase in (False, True):
                layer = layers.ComplexOrderEmbedding(
                    vocab,
                    dim,
                    frequency_sharing=schemes[0],
                    amplitude_sharing=schemes[1],
                    use_initial_phase=phase,
                )
                layer.build((None, None))
                frequency = rng.uniform(-2, 2, _shape(schemes[0], vocab, dim))
                amplitude = rng.normal(size=_shape(schemes[1], vocab, dim))
                theta = rng.uniform(-np.pi, np.pi, (vocab, dim))
                values = [frequency, amplitude] + ([theta] if phase else [])
                layer.set_weights([v.astype("float32") for v in values])
                expected = _reference(
                    ids,
                    frequency.astype("float32"),
                    amplitude.astype("float32"),
                    theta.astype("float32") if phase else None,
                    schemes,
                    dim,
                )
                self.assertAllClose(layer(ids), expected, atol=2e-6)

    def test_sinusoidal_frequency_initialization(self):
        vocab, dim = 5, 6
        omega = 10000.0 ** (-2.0 * np.arange(dim) / (2 * dim))
        expected = {
            "none": np.tile(omega, (vocab, 1)),
            "word": omega,
            "dimension": omega[np.arange(vocab) % dim],
        }
        for sharing in SCHEMES:
            layer = layers.ComplexOrderEmbedding(
                vocab, dim, frequency_sharing=sharing
            )
            layer.build((None, None))
            self.assertAllClose(layer.frequency, expected[sharing], atol=1e-7)

    def test_word_sharing_gives_transformer_sinusoids(self):
        # App. A, Eq. 8-9: word-shared sinusoidal frequencies, r = 1 and
        # theta = 0 give Re f_k(pos) = cos(pos omega_k) = PE_{2k+1}(pos) and
        # Im f_k(pos) = sin(pos omega_k) = PE_{2k}(pos), for every word.
        vocab, dim, length = 9, 8, 12
        ids = np.random.default_rng(2).integers(0, vocab, (2, length))
        layer = layers.ComplexOrderEmbedding(
            vocab,
            dim,
            frequency_sharing="word",
            amplitude_initializer=np.ones((vocab, dim)),
        )
        out = keras.ops.convert_to_numpy(layer(ids.astype("int32")))
        # Independent numpy: d_model = 2 * dim, pos = index + 1.
        pos = np.arange(1, length + 1, dtype="float64")[:, None]
        omega = 1.0 / 10000.0 ** (2 * np.arange(dim) / (2 * dim))
        real = np.broadcast_to(np.cos(pos * omega), (2, length, dim))
        imag = np.broadcast_to(np.sin(pos * omega), (2, length, dim))
        self.assertAllClose(out[..., :dim], real, atol=1e-5)
        self.assertAllClose(out[..., dim:], imag, atol=1e-5)
        # Sequence index t of our output (pos = t + 1) matches KerasHub's
        # row t with start_index=1, i.e. row t + 1 with start_index=0;
        # complex dimension k matches KerasHub's columns 2k (sine, the
        # imaginary part) and 2k + 1 (cosine, the real part), for
        # hidden_dim = 2 * dim.
        keras_hub = pytest.importorskip("keras_hub")
        encoding = keras_hub.layers.SinePositionEncoding()
        hub = encoding(np.zeros((1, length, 2 * dim), "float32"), start_index=1)
        hub = keras.ops.convert_to_numpy(hub)[0]
        self.assertAllClose(out[0, :, :dim], hub[:, 1::2], atol=1e-6)
        self.assertAllClose(out[0, :, dim:], hub[:, 0::2], atol=1e-6)
        hub0 = encoding(np.zeros((1, length + 1, 2 * dim), "float32"))
        hub0 = keras.ops.convert_to_numpy(hub0)[0]
        self.assertAllClose(out[1, :, :dim], hub0[1:, 1::2], atol=1e-6)
        self.assertAllClose(out[1, :, dim:], hub0[1:, 0::2], atol=1e-6)
        # KerasHub's row 0 (pos = 0: sin 0 = 0, cos 0 = 1) has no
        # counterpart here: positions start at 1.
        self.assertAllClose(hub0[0, 1::2], np.ones(dim))

    def test_shift_is_a_rotation(self):
        # Moving a word by n positions multiplies it by exp(i omega n).
        layer = layers.ComplexOrderEmbedding(6, 4)
        ids = np.array([[3, 5, 5, 5, 5, 5, 5]], "int32")
        moved = np.array([[5, 5, 5, 5, 3, 5, 5]], "int32")
        out = keras.ops.convert_to_numpy(layer(ids))[0, 0]
        out_moved = keras.ops.convert_to_numpy(layer(moved))[0, 4]
        omega = keras.ops.convert_to_numpy(layer.frequency)[3]
        z = (out[:4] + 1j * out[4:]) * np.exp(1j * omega * 4)
        self.assertAllClose(out_moved, np.concatenate([z.real, z.imag]))

    def test_amplitude_initializer_array(self):
        glove = np.random.default_rng(3).normal(size=(7, 4)).astype("float32")
        layer = layers.ComplexOrderEmbedding(7, 4, amplitude_initializer=glove)
        layer.build((None, None))
        self.assertAllClose(layer.amplitude, glove)
        self.assertEqual(
            layer.get_config()["amplitude_initializer"]["class_name"],
            "RandomUniform",
        )
        shared = np.arange(4.0)
        layer = layers.ComplexOrderEmbedding(
            7, 4, amplitude_sharing="word", amplitude_initializer=shared
        )
        layer.build((None, None))
        self.assertAllClose(layer.amplitude, shared)

    def test_mask_zero_propagates(self):
        ids = _ids()
        embedding = layers.ComplexOrderEmbedding(7, 3, mask_zero=True)
        self.assertAllEqual(embedding.compute_mask(ids), ids != 0)
        pooling = layers.ComplexMultiplicationPooling(
            input_format="complex", output_format="complex"
        )
        via_keras_mask = pooling(embedding(ids))
        explicit = pooling(embedding(ids), mask=ids > 0)
        self.assertAllClose(via_keras_mask, explicit)
        everything = np.ones(ids.shape, bool)
        self.assertNotAllClose(
            via_keras_mask, pooling(embedding(ids), mask=everything)
        )
        # In a functional model the mask reaches the next layer too.
        inputs = keras.Input((None,), dtype="int32")
        outputs = pooling(embedding(inputs))
        model = keras.Model(inputs, outputs)
        self.assertAllClose(model(ids), explicit, atol=1e-6)
        self.assertIsNone(layers.ComplexOrderEmbedding(7, 3).compute_mask(ids))

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match=r"`input_dim`.*input_dim=0"):
            layers.ComplexOrderEmbedding(0, 4)
        with pytest.raises(ValueError, match=r"`output_dim`.*output_dim=2.5"):
            layers.ComplexOrderEmbedding(5, 2.5)
        with pytest.raises(
            ValueError, match=r"`frequency_sharing`.*frequency_sharing='words'"
        ):
            layers.ComplexOrderEmbedding(5, 4, frequency_sharing="words")
        with pytest.raises(
            ValueError, match=r"`amplitude_sharing`.*amplitude_sharing='all'"
        ):
            layers.ComplexOrderEmbedding(5, 4, amplitude_sharing="all")
        with pytest.raises(
            ValueError,
            match=r"amplitude_initializer.*\(5, 4\).*shape=\(4, 5\)",
        ):
            layers.ComplexOrderEmbedding(
                5, 4, amplitude_initializer=np.zeros((4, 5))
            )
        with pytest.raises(ValueError, match=r"\(4,\).*shape=\(5, 4\)"):
            layers.ComplexOrderEmbedding(
                5,
                4,
                amplitude_sharing="word",
                amplitude_initializer=np.zeros((5, 4)),
            )

    def test_long_positions_and_mixed_precision(self):
        # omega * pos in float32 loses 4e-3 rad at pos = 1e5; float16 gives
        # NaN from position 65520 on, bfloat16 5 % errors from ~200.
        length, vocab, dim = 200_000, 5, 3
        ids = (np.arange(length) % (vocab - 1) + 1).astype("int32")[None]
        rng = np.random.default_rng(4)
        frequency = rng.uniform(1e-4, 3, (vocab, dim)).astype("float32")
        amplitude = rng.uniform(0.5, 1, (vocab, dim)).astype("float32")
        expected = _reference(
            ids, frequency, amplitude, None, ("none", "none"), dim
        )
        for policy, atol in (
            ("float32", 1e-5),
            ("mixed_float16", 2e-3),
            ("mixed_bfloat16", 1e-2),
        ):
            layer = layers.ComplexOrderEmbedding(vocab, dim, dtype=policy)
            layer.build(ids.shape)
            layer.set_weights([frequency, amplitude])
            out = layer(ids)
            self.assertEqual(
                keras.backend.standardize_dtype(out.dtype),
                layer.compute_dtype,
            )
            out = keras.ops.convert_to_numpy(out).astype("float64")
            self.assertAllClose(out, expected, atol=atol, msg=policy)

    def test_bad_token_ids_and_ranks(self):
        layer = layers.ComplexOrderEmbedding(10, 4)
        for bad in (10, -1):
            ids = np.array([[3, bad]], "int32")
            with pytest.raises(
                ValueError, match=rf"input_dim=10.*from {min(3, bad)}"
            ):
                layer(ids)
        with pytest.raises(TypeError, match="inputs.*dtype=float32"):
            layer(np.array([[3.9, 1.0]], "float32"))
        # Positions count along axis 1: a rank-3 input has no such meaning.
        with pytest.raises(ValueError, match=r"inputs.shape=\(2, 3, 4\)"):
            layer(np.ones((2, 3, 4), "int32"))
        with pytest.raises(ValueError, match=r"inputs.shape=\(None, 3, 4\)"):
            layer(keras.Input((3, 4), dtype="int32"))
        out = layer(np.array([[0, 9]], "int32"))
        self.assertEqual(tuple(out.shape), (1, 2, 8))

    def test_saving(self):
        ids = _ids()
        inputs = keras.Input((None,), dtype="int32")
        embedded = layers.ComplexOrderEmbedding(
            7,
            4,
            frequency_sharing="word",
            use_initial_phase=True,
            mask_zero=True,
        )(inputs)
        outputs = layers.ComplexMultiplicationPooling(
            input_format="complex", output_format="complex"
        )(embedded)
        model = keras.Model(inputs, outputs)
        self.run_model_saving_test(model, ids)
        self.run_weights_roundtrip_test(model, ids)

    def test_golden(self):
        self.assert_golden("complex_order_embedding")
