"""The Fusion Encoder Network: its architecture and `fuse()`.

How `model.fit` trains it (the paper's local, segment-by-segment
objective) is `LocalFusionObjective`, in `local_objective.py`.
"""

import keras
import numpy as np
from keras import ops

from keras_msets.layers._layer_base import arguments_config
from keras_msets.layers.grouped_mlp import GroupedMLP
from keras_msets.models._id_inputs import TokenIdInputs
from keras_msets.models.fen.fused_network import FusedNetwork  # noqa: F401
from keras_msets.models.fen.fused_network import fused_network
from keras_msets.models.fen.local_objective import LocalFusionObjective
from keras_msets.models.fen.local_objective import segment_token_counts
from keras_msets.models.fen.segments import FusionSegments
from keras_msets.models.fen.segments import padded_length
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_int_list
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import is_int

SHARING_MODES = ("none", "level", "all")

# The constructor arguments that describe the network (the training
# arguments are those of `LocalFusionObjective`).
_ARCHITECTURE_ARGUMENTS = (
    "sequence_length",
    "vocabulary_size",
    "output_dim",
    "encoding_dim",
    "token_encoder_units",
    "fusion_encoder_units",
    "decoder_units",
    "activation",
    "encoding_activation",
    "output_activation",
    "sharing",
)


def _units(name, value):
    """A width or a list of widths, as a list of positive integers."""
    return check_int_list(name, [value] if is_int(value) else value)


def _objective_argument(name):
    """A read-only view of the training argument `name` of `objective`."""
    return property(lambda self: getattr(self.objective, name))


def _runs(groups):
    """Split a static group array into maximal runs of one group."""
    groups = np.asarray(groups)
    edges = np.flatnonzero(np.diff(groups)) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [len(groups)]])
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


@keras.saving.register_keras_serializable(package="keras_msets")
class FusionEncoderNetwork(TokenIdInputs, keras.Model):
    """Fusion Encoder Network: a sequence model trained segment by segment.

    Every segment `(i, j)` of the set S of `FusionSegments` gets an encoding
    `eps_ij`: a token encoder `alpha` encodes single tokens, and a fusion
    encoder `beta` fuses the encodings of the two parts a segment is split
    into, `eps_ij = beta(eps_{i,sigma}, eps_{sigma+1,j})`; an output decoder
    `omega` maps the encodings of the prefix `(1, i - 1)`, the segment and
    the suffix `(j + 1, N)` to a prediction `y_ij` of the target of the
    whole sequence (Pasteris et al., Sec. 7-9). Each segment's
    encoder/decoder pair is trained on its own loss `l(y_ij)`, with every
    encoding it receives as input held constant (Sec. 9), so no gradient
    travels through more than one pair; the prediction is the root
    decoder's `omega(0, eps_{1,N}, 0)` (Sec. 9 and 11), which depends only
    on the token encoders and the fusion encoders of the tree's vertices:
    `fuse()` returns that log-depth network as a standalone model.

    This class is the architecture. How `model.fit` trains it is the
    `LocalFusionObjective` it holds as `objective`, built from the four
    training arguments below: `compute_loss` hands it the batch and the
    compiled loss, and it returns the summed losses of all `N log2(N) + 1`
    decoders with every pair's input encodings held constant (the gradient
    of a pair's parameters is then exactly the paper's update direction
    for that pair, tested against a hand-written one-pair gradient). The
    encodings of a tree level are computed together: `log2(N)` sequential
    steps, no Python loop over segments at run time. `call` (and
    `predict`, `evaluate`) computes only the root output, in O(N). In a
    training step, `call(x, training=True)` computes every segment once
    for the objective, which reuses it, and returns the root decoder's
    output from it (the same value, up to rounding), so a step runs the
    networks once.

    Design choices the paper leaves open (documented deviations): the
    networks are MLPs of user-set widths with ReLU hidden layers;
    encodings pass through `encoding_activation` (tanh by default) so that
    they stay bounded along the `log2(N)` fusions and 0 (the paper's
    encoding of the empty segment, the monoid's identity) lies inside their
    range; tokens are integer ids (the token encoder's first layer is an
    embedding table); a length that is not a power of two is padded on the
    right to the next power of two with a learned padding token (its own
    embedding row, id `vocabulary_size`).

    Args:
        sequence_length: positive integer, the input length.
        vocabulary_size: positive integer, token ids lie in
            `[0, vocabulary_size)`.
        output_dim: positive integer, width of the decoders' output.
        encoding_dim: positive integer, width of the encodings (the space
            E of the paper).
        token_encoder_units, fusion_encoder_units, decoder_units: lists of
            hidden widths of alpha, beta and omega (constant depth).
        activation: hidden activation of the three networks.
        encoding_activation: activation of alpha's and beta's outputs.
        output_activation: activation of the decoders' output (e.g.
            `"sigmoid"` with a binary cross-entropy, or None with a
            from-logits loss).
        sharing: `"none"` (one parameterisation per segment: `N` token
            encoders, `|S| - N` fusion encoders, `|S|` decoders, as in the
            paper), `"level"` (one per tree level) or `"all"` (one alpha,
            one beta and one omega: O(1) parameters, the paper's remark).
        gradient: training (`LocalFusionObjective`): `"local"` (the
            paper's training) or `"end_to_end"` (an ablation: the same
            summed loss, back-propagated through the whole tree).
        segment_loss_reduction: training: `"sum"` of the segments' losses
            (the paper: each pair takes its own full step) or `"mean"`.
        segment_learning_rates: training: None (uniform) or an array
            `[|S|, 2]` of `(eta_ij, eta_bar_ij)` per segment in
            `FusionSegments` order (Sec. 8): `eta` scales the decoder's
            update and `eta_bar` the encoder's.
        token_count_loss_weight: training: float >= 0. 0 (the default) is
            the paper's training. A positive weight adds the network a
            linear head `count_readout` (shared by all segments) and an
            auxiliary loss of our own design that asks every segment's
            encoding for its token counts, which long segments otherwise
            blur (benchmarks/RESULTS.md, FEN). It does not make the counts
            exact: in the `fen_dyck_64` preset the rounded readout gets
            both counts right for a fraction 0.52, 0.17 and 0.22 of the
            segments of lengths 16, 32 and 64 (its card and metadata;
            `keras-msets zoo evaluate fen_dyck_64` re-measures them).
            Inference (`call`, `fuse()`) does not use the head.
        **kwargs: base model keyword arguments (`name`, ...).

    Call arguments:
        inputs: int tensor `[batch, sequence_length]` of token ids. Ids
            must lie in `[0, vocabulary_size)` (id `vocabulary_size` is
            the padding token) with an int dtype: `model(x)`,
            `predict`, `evaluate` and `fit` raise an error otherwise (for
            arrays and tensors; a dataset's ids are checked only where the
            step runs eagerly, see `keras_msets.models._id_inputs`).
        training: bool or None. True (Keras's training step) computes
            every segment's output and keeps it for the loss of the same
            `x`; the returned root output has the same value.

    Output shape:
        `[batch, output_dim]`: the root decoder's output.

    Example:
    >>> fen = keras_msets.models.FusionEncoderNetwork(
    ...     sequence_length=8, vocabulary_size=3, output_dim=1,
    ...     output_activation="sigmoid", sharing="all")
    >>> fen(np.ones((2, 8), "int32")).shape
    (2, 1)
    >>> fen.segment_outputs(np.ones((2, 8), "int32")).shape
    (2, 25, 1)

    References:
        - Pasteris et al., "Fusion Encoder Networks", arXiv:2402.15883.
    """

    def __init__(
        self,
        sequence_length,
        vocabulary_size,
        output_dim=1,
        encoding_dim=32,
        token_encoder_units=(64,),
        fusion_encoder_units=(64,),
        decoder_units=(64,),
        activation="relu",
        encoding_activation="tanh",
        output_activation=None,
        sharing="none",
        gradient="local",
        segment_loss_reduction="sum",
        segment_learning_rates=None,
        token_count_loss_weight=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.sequence_length = check_positive_int(
            "sequence_length", sequence_length
        )
        self.vocabulary_size = check_positive_int(
            "vocabulary_size", vocabulary_size
        )
        self.output_dim = check_positive_int("output_dim", output_dim)
        self.encoding_dim = check_positive_int("encoding_dim", encoding_dim)
        self.token_encoder_units = _units(
            "token_encoder_units", token_encoder_units
        )
        self.fusion_encoder_units = _units(
            "fusion_encoder_units", fusion_encoder_units
        )
        self.decoder_units = _units("decoder_units", decoder_units)
        self.activation = keras.activations.get(activation)
        self.encoding_activation = keras.activations.get(encoding_activation)
        self.output_activation = keras.activations.get(output_activation)
        self.sharing = check_choice("sharing", sharing, SHARING_MODES)
        self.padded_length = padded_length(self.sequence_length)
        self.segments = FusionSegments(self.padded_length)
        self.objective = LocalFusionObjective(
            self.segments,
            gradient=gradient,
            segment_loss_reduction=segment_loss_reduction,
            segment_learning_rates=segment_learning_rates,
            token_count_loss_weight=token_count_loss_weight,
        )

        group_ids = self.segments.group_ids
        self._token_groups, token_count = group_ids(self.sharing, "token")
        self._fusion_groups, fusion_count = group_ids(self.sharing, "fusion")
        self._decoder_groups, decoder_count = group_ids(self.sharing, "decoder")
        e = self.encoding_dim
        pad = (
            self.padded_length if self.padded_length > sequence_length else None
        )

        def grouped_mlp(name, units, output_activation, **options):
            """One of the three networks: a `GroupedMLP` (name frozen)."""
            return GroupedMLP(
                units,
                activation=activation,
                output_activation=output_activation,
                dtype=self.dtype_policy,
                name=name,
                **options,
            )

        self.token_encoder = grouped_mlp(
            "token_encoder",
            self.token_encoder_units + [e],
            encoding_activation,
            num_groups=token_count,
            vocabulary_size=self.vocabulary_size,
            pad_to=pad,
        )
        self.fusion_encoder = None
        if self.segments.depth:
            self.fusion_encoder = grouped_mlp(
                "fusion_encoder",
                self.fusion_encoder_units + [e],
                encoding_activation,
                num_groups=fusion_count,
                input_dim=2 * e,
            )
        self.decoder = grouped_mlp(
            "decoder",
            self.decoder_units + [self.output_dim],
            output_activation,
            num_groups=decoder_count,
            input_dim=3 * e,
        )
        self.count_readout = None
        if self.token_count_loss_weight:
            self.count_readout = keras.layers.Dense(
                self.vocabulary_size,
                dtype=self.dtype_policy,
                name="count_readout",
            )

    def build(self, input_shape=None):
        self.token_encoder.build()
        if self.fusion_encoder is not None:
            self.fusion_encoder.build()
        self.decoder.build()
        if self.count_readout is not None:
            self.count_readout.build((None, self.encoding_dim))
        self.built = True

    def _check_inputs(self, inputs):
        shape = tuple(inputs.shape)
        if len(shape) != 2 or shape[1] != self.sequence_length:
            raise ValueError(
                "`inputs` must be token ids of shape (batch, "
                f"{self.sequence_length}). Received: inputs.shape={shape}"
            )
        # Id `vocabulary_size` is the learned padding token: not an input.
        self._check_token_ids(inputs)
        return ops.cast(inputs, "int32")

    # The training arguments live in the objective; read them here.
    gradient = _objective_argument("gradient")
    segment_loss_reduction = _objective_argument("segment_loss_reduction")
    segment_learning_rates = _objective_argument("segment_learning_rates")
    token_count_loss_weight = _objective_argument("token_count_loss_weight")

    # -- the full FEN: all segments -------------------------------------

    def encodings(self, inputs, hold_inputs=False):
        """Encodings of all segments: `[batch, 1 + |S|, encoding_dim]`.

        Row 0 is the empty segment (zeros); row k is segment number k of
        `self.segments`. With `hold_inputs=True` the inputs of every fusion
        encoder are wrapped in `stop_gradient` (Sec. 9: each encoder learns
        with its input encodings held constant); the values are the same.
        """
        if not self.built:
            self.build()
        ids = self._check_inputs(inputs)
        tokens = self.token_encoder.apply_groups(ids, self._token_groups)
        table = ops.concatenate([ops.zeros_like(tokens[:, :1]), tokens], 1)
        n = self.padded_length
        for level in self.segments.levels:
            left = ops.take(table, level["left"], axis=1)
            right = ops.take(table, level["right"], axis=1)
            if hold_inputs:
                left = ops.stop_gradient(left)
                right = ops.stop_gradient(right)
            pairs = ops.concatenate([left, right], axis=-1)
            groups = self._fusion_groups[level["segments"] - n - 1]
            fused = self._apply_by_runs(self.fusion_encoder, pairs, groups)
            table = ops.concatenate([table, fused], axis=1)
        return table

    def _apply_by_runs(self, mlp, x, groups):
        runs = _runs(groups)
        if len(runs) == 1 or len(runs) == len(groups):
            return mlp.apply_groups(x, groups)
        parts = [mlp.apply_groups(x[:, a:b], groups[a:b]) for a, b in runs]
        return ops.concatenate(parts, axis=1)

    def segment_contexts(self, table):
        """The three encodings each decoder reads, from `encodings`.

        Returns `(before, own, after)`, each `[batch, |S|, encoding_dim]`:
        for segment `(i, j)` the encodings of `(1, i - 1)`, of `(i, j)` and
        of `(j + 1, N)` (zeros where empty).
        """
        own = table[:, 1:]
        before = ops.take(table, self.segments.left_context, axis=1)
        after = ops.take(table, self.segments.right_context, axis=1)
        return before, own, after

    def decode_segments(self, before, own, after):
        """Every decoder `omega_ij(before, own, after)`: `[batch, |S|, out]`."""
        x = ops.concatenate([before, own, after], axis=-1)
        return self._apply_by_runs(self.decoder, x, self._decoder_groups)

    def segment_outputs(self, inputs):
        """Every decoder's output `y_ij`: `[batch, |S|, output_dim]`.

        Segment order is that of `self.segments.segments`. Training uses
        the same outputs with its gradient routing
        (`objective.segment_outputs`).
        """
        table = self.encodings(inputs)
        return self.decode_segments(*self.segment_contexts(table))

    def segment_token_counts(self, inputs):
        """Token counts of every segment: `[batch, |S|, vocabulary_size]`.

        The targets of the auxiliary loss (`token_count_loss_weight`);
        padding positions count for no id.
        """
        ids = self._check_inputs(inputs)
        return segment_token_counts(ids, self.segments, self.vocabulary_size)

    def predicted_token_counts(self, inputs):
        """The count readout's estimate of `segment_token_counts`.

        Only for a model built with `token_count_loss_weight > 0`.
        """
        if self.count_readout is None:
            raise ValueError(
                "`predicted_token_counts` needs a count readout: build the "
                "model with `token_count_loss_weight > 0`. Received: "
                f"token_count_loss_weight={self.token_count_loss_weight}"
            )
        return self.read_counts(self.encodings(inputs))

    def read_counts(self, table):
        """The count readout applied to every segment's own encoding."""
        scale = float(self.padded_length)
        return ops.cast(self.count_readout(table[:, 1:]), "float32") * scale

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        """Training: `self.objective`'s loss; otherwise the root's.

        `fit` calls this with `training=True` and gets the local objective
        (every segment's decoder against the sequence's target, plus the
        auxiliary count loss if any). `evaluate` reports the root loss.
        """
        base = super().compute_loss
        if not training or y is None:
            return base(x, y, y_pred, sample_weight, training=training)

        def compiled_loss(targets, predictions, weights):
            return base(x, targets, predictions, weights, training=True)

        return self.objective(
            self, x, y, sample_weight, compiled_loss, y_pred=y_pred
        )

    # -- the final network of Sec. 11 -----------------------------------

    def _vertex_groups(self, height):
        numbers = self.segments.vertex_segments[height]
        return self._fusion_groups[numbers - self.padded_length - 1]

    def call(self, inputs, training=None):
        if training:
            # A training step (Keras runs `call` and then `compute_loss`
            # on the same `x`): compute every segment once, keep it for
            # the local objective, and return the root decoder's output
            # from it (the value of the root network below).
            forward = self.objective.forward(self, inputs)
            root = self.segments.index[(1, self.padded_length)]
            y_pred = forward[1][:, root - 1]
            self.objective.remember(y_pred, forward)
            return y_pred
        ids = self._check_inputs(inputs)
        x = self.token_encoder.apply_groups(ids, self._token_groups)
        e = self.encoding_dim
        for height in range(1, self.segments.depth + 1):
            x = ops.reshape(x, (-1, self.padded_length >> height, 2 * e))
            x = self.fusion_encoder.apply_groups(x, self._vertex_groups(height))
        zeros = ops.zeros_like(x)
        x = ops.concatenate([zeros, x, zeros], axis=-1)
        root = self.segments.index[(1, self.padded_length)]
        y = self.decoder.apply_groups(x, self._decoder_groups[[root - 1]])
        return ops.reshape(y, (-1, self.output_dim))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.output_dim)

    def fuse(self, name=None):
        """The trained network of Sec. 11 as a standalone functional model.

        It keeps only the token encoders, the fusion encoders of the tree's
        internal vertices and the root decoder `omega(0, eps_1N, 0)` (whose
        zero context inputs are folded away: only the kernel rows that read
        `eps_1N` are kept, which gives the same numbers). Its depth is
        `log2(N) + 2` networks, it has no loss machinery, and it saves and
        loads as an ordinary `.keras` file. It checks its token ids as
        this model does (a `FusedNetwork`).
        """
        return fused_network(self, name)

    def get_config(self):
        config = super().get_config()
        config.update(arguments_config(self, _ARCHITECTURE_ARGUMENTS))
        for name in _ARCHITECTURE_ARGUMENTS:
            if name.endswith("_units"):  # copies, not the model's own lists
                config[name] = list(config[name])
        config.update(self.objective.get_config())
        return config
