import keras
import numpy as np
import pytest

from keras_msets.models import FusionEncoderNetwork
from keras_msets.models import FusionSegments
from keras_msets.models import LocalFusionObjective
from keras_msets.testing import TestCase


def _model(**kwargs):
    config = dict(
        sequence_length=6,
        vocabulary_size=3,
        output_dim=1,
        encoding_dim=4,
        token_encoder_units=[5],
        fusion_encoder_units=[6],
        decoder_units=[7],
        output_activation="sigmoid",
        sharing="level",
    )
    config.update(kwargs)
    return FusionEncoderNetwork(**config)


def _batch(seed=0, batch=5, length=6):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=(batch, length)).astype("int32")
    y = rng.integers(0, 2, size=(batch,)).astype("float32")
    weights = rng.uniform(0.2, 1.0, size=(batch,)).astype("float32")
    return x, y, weights


def _bce(y, p):
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value), "float64")


class LocalFusionObjectiveTest(TestCase):
    def test_the_model_holds_the_objective(self):
        rates = np.full((FusionSegments(8).num_segments, 2), 0.5)
        model = _model(
            gradient="end_to_end",
            segment_loss_reduction="mean",
            segment_learning_rates=rates,
            token_count_loss_weight=0.25,
        )
        objective = model.objective
        self.assertIsInstance(objective, LocalFusionObjective)
        self.assertIs(objective.segments, model.segments)
        self.assertFalse(objective.local)
        self.assertEqual(model.gradient, "end_to_end")
        self.assertEqual(model.segment_loss_reduction, "mean")
        self.assertEqual(model.segment_learning_rates, rates.tolist())
        self.assertEqual(model.token_count_loss_weight, 0.25)
        config = model.get_config()
        for key, value in objective.get_config().items():
            self.assertEqual(config[key], value)
        # The objective has no weights: every weight is the network's.
        self.assertEqual(
            sorted(vars(objective)),
            sorted(
                [
                    "segments",
                    "gradient",
                    "segment_loss_reduction",
                    "segment_learning_rates",
                    "token_count_loss_weight",
                ]
            ),
        )
        self.assertTrue(_model().objective.local)

    def test_training_outputs_equal_the_models(self):
        x, _, _ = _batch()
        for gradient in ("local", "end_to_end"):
            model = _model(
                gradient=gradient,
                segment_learning_rates=np.full((25, 2), [2.0, 0.5]),
            )
            table = model.encodings(x, hold_inputs=model.objective.local)
            self.assertAllClose(table, model.encodings(x))
            self.assertAllClose(
                model.objective.segment_outputs(model, table),
                model.segment_outputs(x),
            )

    def test_loss_against_numpy(self):
        # The training loss from the segments' outputs, in float64 numpy:
        # the compiled loss of every decoder (weighted by eta and the
        # sample weights, averaged over batch * |S| rows), times |S| for
        # "sum", plus the count loss.
        x, y, weights = _batch(seed=1)
        count = FusionSegments(8).num_segments
        rates = np.random.default_rng(2).uniform(0.5, 2.0, size=(count, 2))
        for reduction in ("sum", "mean"):
            for sample_weight in (None, weights):
                model = _model(
                    segment_loss_reduction=reduction,
                    segment_learning_rates=rates,
                    token_count_loss_weight=0.3,
                )
                model.compile(optimizer="sgd", loss="binary_crossentropy")
                loss = model.compute_loss(
                    x=x, y=y, sample_weight=sample_weight, training=True
                )
                outputs = _numpy(model.segment_outputs(x))[..., 0]
                w = rates[:, 0][None, :] * np.ones_like(outputs)
                sw = np.ones(len(x)) if sample_weight is None else weights
                w = w * sw[:, None]
                decoders = np.mean(w * _bce(y[:, None], outputs))
                error = _numpy(model.predicted_token_counts(x)) - _numpy(
                    model.segment_token_counts(x)
                )
                per = np.mean(error**2, -1) * rates[:, 1] * sw[:, None]
                counts = 0.3 * np.mean(per)
                scale = count if reduction == "sum" else 1
                self.assertAllClose(
                    loss, scale * (decoders + counts), atol=1e-5, rtol=1e-5
                )

    def test_a_training_step_runs_the_segments_once(self):
        # Keras's step calls `model(x, training=True)` and then the loss:
        # the loss reuses that call's pass of every segment instead of
        # computing the networks again, with the same loss value.
        x, y, _ = _batch(seed=4)
        model = _model(token_count_loss_weight=0.5)
        model.compile(optimizer="sgd", loss="binary_crossentropy")
        expected = _numpy(model.compute_loss(x=x, y=y, training=True))
        self.assertAllClose(model(x, training=True), model(x), atol=1e-6)
        objective = model.objective
        forward, recall, passes = objective.forward, objective.recall, []
        objective.forward = lambda *a: passes.append("forward") or forward(*a)
        objective.recall = lambda y_pred: (
            passes.append(
                "reused" if objective.__dict__.get("_remembered") else "none"
            )
            or recall(y_pred)
        )
        loss = model.train_on_batch(x, y)
        self.assertAllClose(loss, expected, atol=1e-5, rtol=1e-5)
        # One pass per traced step (TensorFlow may trace twice), each
        # reused by the loss.
        self.assertEqual(passes[::2], ["forward"] * (len(passes) // 2))
        self.assertEqual(passes[1::2], ["reused"] * (len(passes) // 2))
        self.assertGreater(len(passes), 0)
        self.assertNotIn("_remembered", vars(objective))

    def test_evaluation_loss_is_the_roots(self):
        x, y, _ = _batch(seed=3)
        model = _model(token_count_loss_weight=0.5)
        model.compile(optimizer="sgd", loss="binary_crossentropy")
        y_pred = model(x)
        loss = model.compute_loss(x=x, y=y, y_pred=y_pred, training=False)
        expected = np.mean(_bce(y, _numpy(y_pred)[:, 0]))
        self.assertAllClose(loss, expected, atol=1e-5, rtol=1e-5)

    def test_bad_arguments(self):
        segments = FusionSegments(4)
        cases = [
            (dict(gradient="global"), "gradient"),
            (dict(segment_loss_reduction="max"), "segment_loss_reduction"),
            (dict(segment_learning_rates=np.ones((3, 2))), r"\(9, 2\)"),
            (dict(segment_learning_rates=-np.ones((9, 2))), "positive"),
            (dict(token_count_loss_weight=-1.0), "token_count_loss_weight"),
            (dict(token_count_loss_weight=True), "token_count_loss_weight"),
        ]
        for kwargs, match in cases:
            with pytest.raises(ValueError, match=match):
                LocalFusionObjective(segments, **kwargs)
