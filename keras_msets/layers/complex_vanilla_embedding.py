import math

import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._layer_base import arguments_config
from keras_msets.layers._word_embedding_utils import TokenEmbeddingLayer
from keras_msets.layers._word_embedding_utils import array_initializer
from keras_msets.layers._word_embedding_utils import as_ids
from keras_msets.layers._word_embedding_utils import matrix_or_initializer
from keras_msets.utils.validation import check_bool


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexVanillaEmbedding(TokenEmbeddingLayer):
    """Complex word embedding with a random phase and no position.

    The "Complex-vanilla" baseline of Wang et al. (Sec. 3.1, Table 2;
    `r_{j,d} e^{i omega_{j,d}}` in Table 4), taken from the quantum-inspired
    networks of Wang et al. (2019) and Li et al. (2019): word `j` is the
    complex vector `z_j = r_j * exp(i theta_j)`, dimension by dimension,
    with an amplitude `r_j` (a classical word vector, e.g. initialised with
    pre-trained vectors) and a phase `theta_j` drawn uniformly from
    `[-pi, pi)`. The phase depends on the word only, never on its position,
    so the embedding carries no word order: it is `ComplexOrderEmbedding`
    with `omega pos` replaced by a constant.

    Trainable phase: the paper says only that the phase is "randomly
    initialized in a range from -pi to pi". By default (`trainable_phase=
    False`) the phases stay fixed, so the variant has exactly the
    `input_dim * output_dim` trainable parameters of a real word embedding;
    `trainable_phase=True` trains them too (Table 4 counts more parameters
    for complex-vanilla than for complex-order, which suggests the authors
    did). Fixed phases are a non-trainable weight, saved with the model.

    With `mask_zero=True`, id 0 marks padding: its output is computed like
    any other id and the layer returns the mask `ids != 0`.

    Args:
        input_dim: positive integer, size of the vocabulary.
        output_dim: positive integer, number of complex dimensions `D`; the
            output has `2 * D` real features.
        amplitude_initializer: a Keras initializer (default `"uniform"`, as
            `keras.layers.Embedding`), or an array `(input_dim, output_dim)`
            of initial amplitudes (e.g. GloVe vectors). An array only builds
            the weights; `get_config()` records `"uniform"` instead.
        phase_initializer: initializer of the phases. None (default):
            `keras.initializers.RandomUniform(-pi, pi)`.
        trainable_phase: whether the phases are trained. Defaults to False.
        mask_zero: if True, id 0 is padding and a mask `ids != 0` is
            returned.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    {{token_ids_call_arguments}}

    Output shape:
        `[batch, length, 2 * output_dim]`: the `D` real parts
        `r cos(theta)`, then the `D` imaginary parts `r sin(theta)`.

    Example:
    >>> ids = keras.ops.convert_to_tensor([[4, 2, 7, 0]])
    >>> embedding = keras_msets.layers.ComplexVanillaEmbedding(
    ...     10, 8, mask_zero=True
    ... )
    >>> embedding(ids).shape
    (1, 4, 16)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Wang et al., "Semantic Hilbert Space for Text Representation
          Learning", WWW 2019.
        - Li et al., "CNM: An Interpretable Complex-valued Network for
          Matching", NAACL 2019.
    """

    def __init__(
        self,
        input_dim,
        output_dim,
        amplitude_initializer="uniform",
        phase_initializer=None,
        trainable_phase=False,
        mask_zero=False,
        **kwargs,
    ):
        super().__init__(input_dim, output_dim, mask_zero=mask_zero, **kwargs)
        self.amplitude_initializer, self._amplitude_values = (
            matrix_or_initializer(
                amplitude_initializer,
                (self.input_dim, self.output_dim),
                "amplitude_initializer",
            )
        )
        if phase_initializer is None:
            phase_initializer = keras.initializers.RandomUniform(
                -math.pi, math.pi
            )
        self.phase_initializer = keras.initializers.get(phase_initializer)
        self.trainable_phase = check_bool("trainable_phase", trainable_phase)

    def build(self, input_shape=None):
        shape = (self.input_dim, self.output_dim)
        amplitude_initializer = self.amplitude_initializer
        if self._amplitude_values is not None:
            amplitude_initializer = array_initializer(self._amplitude_values)
        self.amplitude = self.add_weight(
            name="amplitude", shape=shape, initializer=amplitude_initializer
        )
        self.phase = self.add_weight(
            name="phase",
            shape=shape,
            initializer=self.phase_initializer,
            trainable=self.trainable_phase,
        )

    def call(self, inputs):
        ids = as_ids(inputs, self.input_dim)
        amplitude = ops.take(self.amplitude, ids, axis=0)
        phase = ops.take(self.phase, ids, axis=0)
        return msets_ops.complex_merge(
            amplitude * ops.cos(phase), amplitude * ops.sin(phase)
        )

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (2 * self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            arguments_config(
                self,
                (
                    "amplitude_initializer",
                    "phase_initializer",
                    "trainable_phase",
                ),
            )
        )
        return config
