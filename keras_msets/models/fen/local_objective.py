"""The local training objective of a Fusion Encoder Network."""

import numpy as np
from keras import ops

from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_non_negative_float

GRADIENT_MODES = ("local", "end_to_end")
REDUCTIONS = ("sum", "mean")


# The constructor arguments of `LocalFusionObjective`, which
# `FusionEncoderNetwork` takes as its training arguments.
TRAINING_ARGUMENTS = (
    "gradient",
    "segment_loss_reduction",
    "segment_learning_rates",
    "token_count_loss_weight",
)


def scale_gradient(x, scale):
    """`x` in the forward pass; its gradient multiplied by `scale`."""
    stopped = ops.stop_gradient(x)
    return stopped + scale * (x - stopped)


def segment_token_counts(ids, segments, vocabulary_size):
    """Token counts of every segment: `[batch, |S|, vocabulary_size]`.

    The targets of the auxiliary token-count loss. `ids` holds int token
    ids `[batch, length]` with `length <= segments.length`; the padding
    positions beyond `length` count for no id.
    """
    onehot = ops.one_hot(ids, vocabulary_size, dtype="float32")
    prefix = ops.cumsum(onehot, axis=1)
    prefix = ops.concatenate([ops.zeros_like(prefix[:, :1]), prefix], 1)
    extra = segments.length - ids.shape[1]
    if extra > 0:
        last = prefix[:, -1:]
        prefix = ops.concatenate([prefix] + [last] * extra, axis=1)
    spans = np.array(segments.segments, "int32")
    return ops.take(prefix, spans[:, 1], axis=1) - ops.take(
        prefix, spans[:, 0] - 1, axis=1
    )


class LocalFusionObjective:
    """The loss that `model.fit` minimises on a `FusionEncoderNetwork`.

    The paper trains every segment's encoder/decoder pair on its own loss,
    with every encoding the pair receives as an input held constant
    (Pasteris et al., Sec. 9), so no gradient travels through more than one
    pair. This object holds that recipe; the network holds the weights.
    The loss is the compiled loss of each of the `N log2(N) + 1` decoders
    against the target of the whole sequence, summed over segments
    (`segment_loss_reduction="sum"`, the paper: each pair takes its own
    full step) or averaged. With `gradient="local"`, every encoding that
    enters a fusion encoder or a decoder is wrapped in `stop_gradient`,
    except a segment's own encoding entering its own decoder: the gradient
    of a pair's parameters is then exactly the paper's update direction
    for that pair.

    Per-segment learning rates `(eta_ij, eta_bar_ij)` (Sec. 8) become a
    loss weight `eta` on the decoder's loss and a gradient scale
    `eta_bar / eta` on the encoding entering its own decoder: exact
    relative learning rates with plain SGD (adaptive optimisers such as
    Adam normalise away most of a constant scale).

    The auxiliary token-count loss (`token_count_loss_weight > 0`) is a
    remedy of our own, not part of the paper's algorithm: the network's
    linear head `count_readout`, shared by all segments, reads each
    segment's own encoding and regresses how many tokens of each id the
    segment holds. The loss is the squared error in tokens, averaged over
    the batch and the vocabulary, summed (or averaged, as the decoders'
    losses) over segments, times the weight, and scaled by `eta_bar` with
    per-segment learning rates. It needs no labels and is local: its
    gradient reaches only the readout and the encoder that produced the
    segment's encoding, whose inputs are constants as in Sec. 9.

    Args:
        segments: the `FusionSegments` of the network.
        gradient: `"local"` (the paper's training) or `"end_to_end"` (an
            ablation: the same loss, back-propagated through the whole
            tree).
        segment_loss_reduction: `"sum"` or `"mean"` of the segments'
            losses.
        segment_learning_rates: None (uniform) or an array `[|S|, 2]` of
            `(eta_ij, eta_bar_ij)` per segment in `FusionSegments` order.
        token_count_loss_weight: float >= 0, the weight of the auxiliary
            token-count loss (0: the paper's training).

    Example:
    >>> segments = keras_msets.models.FusionSegments(4)
    >>> objective = keras_msets.models.LocalFusionObjective(segments)
    >>> objective.get_config()["gradient"]
    'local'

    References:
        - Pasteris et al., "Fusion Encoder Networks", arXiv:2402.15883.
    """

    def __init__(
        self,
        segments,
        gradient="local",
        segment_loss_reduction="sum",
        segment_learning_rates=None,
        token_count_loss_weight=0.0,
    ):
        self.segments = segments
        self.gradient = check_choice("gradient", gradient, GRADIENT_MODES)
        self.segment_loss_reduction = check_choice(
            "segment_loss_reduction", segment_loss_reduction, REDUCTIONS
        )
        self.token_count_loss_weight = check_non_negative_float(
            "token_count_loss_weight", token_count_loss_weight
        )
        count = segments.num_segments
        self.segment_learning_rates = None
        if segment_learning_rates is not None:
            rates = np.asarray(segment_learning_rates, "float64")
            if rates.shape != (count, 2) or not np.all(
                np.isfinite(rates) & (rates > 0)
            ):
                raise ValueError(
                    "`segment_learning_rates` must be positive finite "
                    f"numbers of shape ({count}, 2) (eta, eta_bar per "
                    "segment). Received: an array of shape "
                    f"{rates.shape}"
                )
            self.segment_learning_rates = rates.tolist()

    @property
    def local(self):
        """Whether each pair trains with its input encodings held constant."""
        return self.gradient == "local"

    def _rates(self, column):
        rates = np.asarray(self.segment_learning_rates)[:, column]
        return ops.convert_to_tensor(rates.astype("float32"))

    def _reduce(self, loss):
        if self.segment_loss_reduction == "sum":
            return loss * self.segments.num_segments
        return loss

    def segment_outputs(self, model, table):
        """Every decoder's output, with the gradient routing of training.

        Args:
            model: the `FusionEncoderNetwork`.
            table: its `encodings`, `[batch, 1 + |S|, encoding_dim]`.

        Returns:
            `[batch, |S|, output_dim]`, equal in value to
            `model.segment_outputs`.
        """
        before, own, after = model.segment_contexts(table)
        if self.local:
            before = ops.stop_gradient(before)
            after = ops.stop_gradient(after)
        if self.segment_learning_rates is not None:
            rates = np.asarray(self.segment_learning_rates)
            ratio = (rates[:, 1] / rates[:, 0]).astype("float32")
            own = scale_gradient(own, ops.convert_to_tensor(ratio)[:, None])
        return model.decode_segments(before, own, after)

    def token_count_loss(self, predicted, counts, sample_weight=None):
        """The weighted auxiliary loss from the readout's estimated counts.

        Args:
            predicted: `[batch, |S|, vocabulary_size]`, the count readout's
                estimates (`model.read_counts`).
            counts: the true counts (`segment_token_counts`), same shape.
            sample_weight: None or `[batch]` weights.
        """
        per = ops.mean(ops.square(predicted - counts), axis=-1)
        if self.segment_learning_rates is not None:
            per = per * self._rates(1)
        if sample_weight is not None:
            sw = ops.reshape(ops.cast(sample_weight, "float32"), (-1, 1))
            per = per * sw
        return self.token_count_loss_weight * self._reduce(ops.mean(per))

    def decoder_loss(self, outputs, y, sample_weight, compiled_loss):
        """The compiled loss of every decoder against the sequence's target.

        Args:
            outputs: `[batch, |S|, output_dim]`, the decoders' outputs.
            y: the targets of the batch, `[batch, ...]`.
            sample_weight: None or `[batch]` weights.
            compiled_loss: `fn(y, y_pred, sample_weight)`, the model's
                compiled loss on `[batch * |S|, ...]` rows.
        """
        count = self.segments.num_segments
        batch = ops.shape(outputs)[0]
        y = ops.convert_to_tensor(y)
        y_shape = tuple(y.shape[1:])
        y_all = ops.broadcast_to(
            ops.expand_dims(y, 1), (batch, count) + y_shape
        )
        y_all = ops.reshape(y_all, (-1,) + y_shape)
        flat = ops.reshape(outputs, (-1, outputs.shape[-1]))
        weights = None
        if self.segment_learning_rates is not None:
            weights = ops.ones((batch, 1)) * ops.cast(
                self._rates(0)[None, :], "float32"
            )
        if sample_weight is not None:
            sw = ops.reshape(ops.cast(sample_weight, "float32"), (-1, 1))
            weights = sw if weights is None else weights * sw
            weights = ops.broadcast_to(weights, (batch, count))
        if weights is not None:
            weights = ops.reshape(weights, (-1,))
        return self._reduce(compiled_loss(y_all, flat, weights))

    def forward(self, model, x):
        """The training forward pass: `(table, outputs)` of one batch.

        `table` is `model.encodings(x)` with the inputs of every encoder
        held constant (`gradient="local"`), `outputs` every decoder's
        output with the gradient routing of `segment_outputs`. The model's
        `call(x, training=True)` computes it once per training step and
        the loss of that step reuses it (`remember`, `recall`).
        """
        table = model.encodings(x, hold_inputs=self.local)
        return table, self.segment_outputs(model, table)

    def remember(self, y_pred, forward):
        """Keep the `forward` pass that gave the root output `y_pred`."""
        self._remembered = (y_pred, forward)

    def recall(self, y_pred):
        """The pass `remember`ed with this very `y_pred` (same object).

        None if there is none. What was remembered is dropped either way,
        so a pass serves at most one loss.
        """
        remembered = self.__dict__.pop("_remembered", None)
        if remembered is None or remembered[0] is not y_pred:
            return None
        return remembered[1]

    def __call__(self, model, x, y, sample_weight, compiled_loss, y_pred=None):
        """The training loss of one batch.

        Reuses the forward pass that `model(x, training=True)` made in the
        same training step when `y_pred` is the output it returned
        (`recall`); otherwise computes it (`forward`).

        Args:
            model: the `FusionEncoderNetwork` being trained.
            x: token ids `[batch, sequence_length]`.
            y: targets `[batch, ...]`.
            sample_weight: None or `[batch]` weights.
            compiled_loss: `fn(y, y_pred, sample_weight)`, the model's
                compiled loss.
            y_pred: None or the model's output for `x` in this step.
        """
        table, outputs = self.recall(y_pred) or self.forward(model, x)
        loss = self.decoder_loss(outputs, y, sample_weight, compiled_loss)
        if self.token_count_loss_weight:
            loss = loss + self.token_count_loss(
                model.read_counts(table),
                model.segment_token_counts(x),
                sample_weight,
            )
        return loss

    def get_config(self):
        return {name: getattr(self, name) for name in TRAINING_ARGUMENTS}

    def __repr__(self):
        return (
            f"LocalFusionObjective(gradient={self.gradient!r}, "
            f"segment_loss_reduction={self.segment_loss_reduction!r}, "
            "segment_learning_rates="
            f"{'None' if self.segment_learning_rates is None else '[...]'}, "
            f"token_count_loss_weight={self.token_count_loss_weight})"
        )
