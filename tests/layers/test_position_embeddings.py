import math

import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.layers.complex_order_embedding import ComplexOrderEmbedding
from keras_msets.layers.position_embeddings import EMBEDDING_VARIANTS
from keras_msets.layers.position_embeddings import ComplexVanillaEmbedding
from keras_msets.layers.position_embeddings import WordPositionEmbedding
from keras_msets.layers.position_embeddings import is_complex_variant
from keras_msets.layers.position_embeddings import make_text_embedding

VOCAB, DIM, LENGTH = 7, 4, 6


def _ids(batch=3, length=LENGTH, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, size=(batch, length))
    ids[0, 4:] = 0
    ids[1, 2:] = 0
    return ids.astype("int32")


def _numpy(layer_weight):
    return keras.ops.convert_to_numpy(layer_weight).astype("float64")


def _sinusoids(length, dim, max_wavelength=10000.0):
    """numpy Eq. 7: PE(pos, 2k) = sin(pos / w^(2k/d)), PE(pos, 2k+1) = cos."""
    pos = np.arange(length, dtype="float64")[:, None]
    k = np.arange(dim) // 2
    angle = pos / max_wavelength ** (2 * k / dim)
    return np.where(np.arange(dim) % 2 == 0, np.sin(angle), np.cos(angle))


class WordPositionEmbeddingTest(testing.TestCase):
    def test_layer_basics(self):
        ids = _ids()
        for position, trainable in (("learned", 2), ("sinusoidal", 1)):
            self.run_layer_test(
                WordPositionEmbedding,
                {
                    "input_dim": VOCAB,
                    "output_dim": DIM,
                    "position": position,
                    "sequence_length": 8,
                    "mask_zero": True,
                },
                ids,
                expected_output_shape=(3, LENGTH, DIM),
                expected_output_dtype="float32",
                expected_num_trainable_weights=trainable,
                expected_num_non_trainable_weights=0,
                supports_masking=True,
                expected_output_mask=ids != 0,
            )

    def test_learned_matches_numpy(self):
        ids = _ids()
        layer = WordPositionEmbedding(VOCAB, DIM, sequence_length=8)
        out = keras.ops.convert_to_numpy(layer(ids))
        words = _numpy(layer.token_embedding.embeddings)
        positions = _numpy(layer.position_embedding.position_embeddings)
        expected = words[ids] + positions[None, :LENGTH]
        self.assertAllClose(out, expected, atol=1e-6)

    def test_sinusoidal_matches_numpy(self):
        ids = _ids(length=9)
        values = np.random.default_rng(1).normal(size=(VOCAB, 6))
        layer = WordPositionEmbedding(
            VOCAB, 6, position="sinusoidal", embeddings_initializer=values
        )
        out = keras.ops.convert_to_numpy(layer(ids))
        expected = values[ids] + _sinusoids(9, 6)[None]
        self.assertAllClose(out, expected, atol=1e-5)
        # The array builds the weights; the config records "uniform".
        self.assertAllClose(layer.token_embedding.embeddings, values, 1e-6)
        config = layer.get_config()["embeddings_initializer"]
        self.assertEqual(config["class_name"], "RandomUniform")

    def test_position_only_depends_on_index(self):
        # Same word at two indices differs by PE(p) - PE(q) only.
        layer = WordPositionEmbedding(
            VOCAB, DIM, position="sinusoidal", mask_zero=True
        )
        out = keras.ops.convert_to_numpy(layer(np.array([[3, 3, 3]])))
        pe = _sinusoids(3, DIM)
        self.assertAllClose(out[0, 2] - out[0, 0], pe[2] - pe[0], atol=1e-6)

    def test_mask_propagates_to_next_layer(self):
        ids = _ids()
        inputs = keras.Input((None,), dtype="int32")
        x = WordPositionEmbedding(
            VOCAB, DIM, sequence_length=8, mask_zero=True
        )(inputs)
        outputs = keras.layers.GlobalAveragePooling1D()(x)
        model = keras.Model(inputs, outputs)
        padded = np.concatenate([ids, np.zeros((3, 2), "int32")], 1)
        self.assertAllClose(model(ids), model(padded), atol=1e-6)

    def test_too_long_input_raises(self):
        layer = WordPositionEmbedding(VOCAB, DIM, sequence_length=4)
        with pytest.raises(ValueError, match="sequence_length`=4"):
            layer(_ids())

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="`position` must be one of"):
            WordPositionEmbedding(VOCAB, DIM, position="rotary")
        with pytest.raises(ValueError, match="`sequence_length` must be"):
            WordPositionEmbedding(VOCAB, DIM, position="learned")
        with pytest.raises(ValueError, match="`input_dim` must be"):
            WordPositionEmbedding(0, DIM, position="sinusoidal")
        with pytest.raises(ValueError, match="`max_wavelength` must be"):
            WordPositionEmbedding(
                VOCAB, DIM, position="sinusoidal", max_wavelength=0
            )
        with pytest.raises(ValueError, match=r"shape \(7, 4\)"):
            WordPositionEmbedding(
                VOCAB,
                DIM,
                position="sinusoidal",
                embeddings_initializer=np.zeros((3, 4)),
            )

    def test_saving(self):
        ids = _ids()
        for position in ("learned", "sinusoidal"):
            inputs = keras.Input((None,), dtype="int32")
            x = WordPositionEmbedding(
                VOCAB,
                DIM,
                position=position,
                sequence_length=8,
                mask_zero=True,
            )(inputs)
            model = keras.Model(inputs, x)
            self.run_model_saving_test(model, ids)
            self.run_weights_roundtrip_test(model, ids)


class ComplexVanillaEmbeddingTest(testing.TestCase):
    def test_layer_basics(self):
        ids = _ids()
        for trainable_phase, counts in ((False, (1, 1)), (True, (2, 0))):
            self.run_layer_test(
                ComplexVanillaEmbedding,
                {
                    "input_dim": VOCAB,
                    "output_dim": DIM,
                    "trainable_phase": trainable_phase,
                    "mask_zero": True,
                },
                ids,
                expected_output_shape=(3, LENGTH, 2 * DIM),
                expected_output_dtype="float32",
                expected_num_trainable_weights=counts[0],
                expected_num_non_trainable_weights=counts[1],
                supports_masking=True,
                expected_output_mask=ids != 0,
            )

    def test_matches_numpy_complex128(self):
        ids = _ids()
        amplitude = np.random.default_rng(2).normal(size=(VOCAB, DIM))
        layer = ComplexVanillaEmbedding(
            VOCAB, DIM, amplitude_initializer=amplitude
        )
        out = keras.ops.convert_to_numpy(layer(ids))
        theta = _numpy(layer.phase)
        z = amplitude[ids] * np.exp(1j * theta[ids])
        expected = np.concatenate([z.real, z.imag], -1)
        self.assertAllClose(out, expected, atol=1e-6)
        # No position information: a word gives the same vector anywhere.
        same = layer(np.array([[5, 5, 5, 5]]))
        self.assertAllClose(same[0, 0], same[0, 3], atol=0)

    def test_phase_is_uniform_and_fixed(self):
        layer = ComplexVanillaEmbedding(200, 50)
        layer.build((None, None))
        phase = _numpy(layer.phase)
        assert phase.min() >= -math.pi and phase.max() <= math.pi
        assert phase.min() < -3.0 and phase.max() > 3.0
        assert not layer.phase.trainable
        assert [w.name for w in layer.trainable_weights] == ["amplitude"]
        # One fit step moves the amplitudes, never the phases.
        inputs = keras.Input((None,), dtype="int32")
        model = keras.Model(inputs, layer(inputs))
        model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
        ids = np.array([[1, 2, 3]], "int32")
        model.fit(ids, np.ones((1, 3, 100)), epochs=1, verbose=0)
        self.assertAllClose(layer.phase, phase, atol=0)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="`output_dim` must be"):
            ComplexVanillaEmbedding(VOCAB, -1)
        with pytest.raises(ValueError, match="`trainable_phase` must be"):
            ComplexVanillaEmbedding(VOCAB, DIM, trainable_phase="yes")
        with pytest.raises(ValueError, match="amplitude_initializer"):
            ComplexVanillaEmbedding(
                VOCAB, DIM, amplitude_initializer=np.zeros((VOCAB, 2))
            )

    def test_saving(self):
        ids = _ids()
        inputs = keras.Input((None,), dtype="int32")
        x = ComplexVanillaEmbedding(VOCAB, DIM, mask_zero=True)(inputs)
        model = keras.Model(inputs, x)
        reloaded = self.run_model_saving_test(model, ids)
        # The random fixed phases travel with the saved weights.
        self.assertAllClose(
            reloaded.layers[1].phase, model.layers[1].phase, atol=0
        )
        self.run_weights_roundtrip_test(model, ids)


class MakeTextEmbeddingTest(testing.TestCase):
    def test_every_variant(self):
        ids = _ids()
        pretrained = np.random.default_rng(3).normal(size=(VOCAB, DIM))
        kinds = {
            "none": keras.layers.Embedding,
            "pe": WordPositionEmbedding,
            "tpe": WordPositionEmbedding,
            "complex_vanilla": ComplexVanillaEmbedding,
            "complex_order": ComplexOrderEmbedding,
        }
        for variant in EMBEDDING_VARIANTS:
            layer = make_text_embedding(
                variant,
                VOCAB,
                DIM,
                sequence_length=LENGTH,
                pretrained_embeddings=pretrained,
            )
            assert type(layer) is kinds[variant], variant
            assert layer.name == "embedding"
            out = keras.ops.convert_to_numpy(layer(ids))
            width = 2 * DIM if is_complex_variant(variant) else DIM
            assert out.shape == (3, LENGTH, width), variant
            self.assertAllEqual(layer.compute_mask(ids), ids != 0)
            # The pretrained vectors are the word vectors / amplitudes.
            if variant == "none":
                self.assertAllClose(out, pretrained[ids], atol=1e-6)
            elif variant == "tpe":
                expected = pretrained[ids] + _sinusoids(LENGTH, DIM)
                self.assertAllClose(out, expected, atol=1e-5)
            elif is_complex_variant(variant):
                real, imag = out[..., :DIM], out[..., DIM:]
                modulus = np.sqrt(real**2 + imag**2)
                self.assertAllClose(modulus, np.abs(pretrained[ids]), atol=1e-5)

    def test_complex_order_is_the_table2_setting(self):
        layer = make_text_embedding("complex_order", VOCAB, DIM)
        assert layer.frequency_sharing == "none"
        assert layer.amplitude_sharing == "none"
        assert not layer.use_initial_phase
        assert layer.mask_zero
        # Options of the chosen layer pass through.
        layer = make_text_embedding(
            "complex_order", VOCAB, DIM, frequency_sharing="word"
        )
        assert layer.frequency_sharing == "word"

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="`variant` must be one of"):
            make_text_embedding("rope", VOCAB, DIM)
        with pytest.raises(ValueError, match="`pretrained_embeddings` must"):
            make_text_embedding(
                "none", VOCAB, DIM, pretrained_embeddings=np.zeros((2, 2))
            )
        with pytest.raises(ValueError, match="`sequence_length` must be"):
            make_text_embedding("pe", VOCAB, DIM)
        with pytest.raises(ValueError, match="`variant` must be one of"):
            is_complex_variant("complex")
