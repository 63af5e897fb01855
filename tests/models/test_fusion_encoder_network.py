import re

import keras
import numpy as np
import pytest

from keras_msets.layers.grouped_mlp import GroupedMLP
from keras_msets.models.fen.fusion_encoder_network import FusedNetwork
from keras_msets.models.fen.fusion_encoder_network import FusionEncoderNetwork
from keras_msets.testing import TestCase

BACKEND = keras.backend.backend()


def _ids(batch=5, length=8, vocabulary=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocabulary, size=(batch, length)).astype("int32")


def _small(**kwargs):
    config = dict(
        sequence_length=8,
        vocabulary_size=3,
        output_dim=1,
        encoding_dim=4,
        token_encoder_units=[5],
        fusion_encoder_units=[6],
        decoder_units=[7],
        output_activation="sigmoid",
    )
    config.update(kwargs)
    return FusionEncoderNetwork(**config)


def _loss_and_gradients(model, x, y):
    """Training loss of `fit` and its gradient for every trainable weight."""
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    x = keras.ops.convert_to_tensor(x)
    y = keras.ops.convert_to_tensor(y)
    if BACKEND == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = model.compute_loss(x=x, y=y, training=True)
        grads = tape.gradient(loss, model.trainable_variables)
    elif BACKEND == "jax":
        import jax

        non_trainable = [v.value for v in model.non_trainable_variables]
        metrics = [v.value for v in model.metrics_variables]

        def fn(trainable):
            loss, _ = model.stateless_compute_loss(
                trainable, non_trainable, metrics, x=x, y=y, training=True
            )
            return loss

        # One compiled program: op-by-op eager differentiation of the
        # segment networks costs more to compile, op by op, on JAX.
        loss, grads = jax.jit(jax.value_and_grad(fn))(
            [v.value for v in model.trainable_variables]
        )
    else:
        for v in model.trainable_variables:
            v.value.grad = None
        loss = model.compute_loss(x=x, y=y, training=True)
        loss.backward()
        grads = [v.value.grad for v in model.trainable_variables]
    named = {
        v.path: np.asarray(keras.ops.convert_to_numpy(g), "float64")
        for v, g in zip(model.trainable_variables, grads, strict=True)
    }
    return float(keras.ops.convert_to_numpy(loss)), named


# A float64 numpy reference: forward pass of one small MLP and the
# gradient of <upstream, output> with respect to its parameters and input.


def _mlp(x, w1, b1, w2, b2, out):
    z1 = x @ w1 + b1
    a1 = np.maximum(z1, 0)
    z2 = a1 @ w2 + b2
    return out(z2), (x, z1, a1, z2)


def _mlp_backward(cache, w1, w2, dz2):
    x, z1, a1, _ = cache
    dw2 = a1.T @ dz2
    db2 = dz2.sum(0)
    dz1 = (dz2 @ w2.T) * (z1 > 0)
    return {
        "w1": x.T @ dz1,
        "b1": dz1.sum(0),
        "w2": dw2,
        "b2": db2,
        "x": dz1 @ w1.T,
    }


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


class FusionEncoderNetworkTest(TestCase):
    def test_root_output_equals_segment_output_and_fused_model(self):
        x = _ids(length=6)
        for sharing in ["none", "level", "all"]:
            model = _small(sequence_length=6, sharing=sharing)
            root = model.segments.index[(1, 8)]
            y = keras.ops.convert_to_numpy(model(x))
            segments = keras.ops.convert_to_numpy(model.segment_outputs(x))
            self.assertEqual(
                segments.shape, (5, model.segments.num_segments, 1)
            )
            self.assertAllClose(segments[:, root - 1], y, atol=1e-6)
            fused = model.fuse()
            self.assertAllClose(fused(x), y, atol=1e-6)
            self.assertAllClose(fused.predict(x, verbose=0), y, atol=1e-6)
            # Depth: token encoder, log2(8) = 3 fusion levels, root decoder.
            calls = sum(
                len(layer._inbound_nodes)
                for layer in fused.layers
                if isinstance(layer, GroupedMLP)
            )
            self.assertEqual(calls, 3 + 2)
            self.assertLessEqual(fused.count_params(), model.count_params())

    def test_fused_model_keeps_only_the_vertex_networks(self):
        model = _small(sharing="none")
        x = _ids()
        model(x)
        fused = model.fuse()
        # 8 token encoders, 4 + 2 + 1 vertex fusion encoders, 1 decoder.
        counts = [
            layer.num_groups
            for layer in fused.layers
            if isinstance(layer, GroupedMLP)
        ]
        self.assertEqual(counts, [8, 4, 2, 1, 1])
        # Named after the model, or as asked (not after a fusion layer).
        self.assertEqual(fused.name, f"{model.name}_fused")
        self.assertEqual(model.fuse(name="tree").name, "tree")
        self.assertLess(fused.count_params(), model.count_params() / 3)
        reloaded = self.run_model_saving_test(fused, x)
        self.assertAllClose(reloaded(x), model(x), atol=1e-6)
        # It reloads as the class whose `predict` checks the ids.
        self.assertIsInstance(reloaded, FusedNetwork)
        with pytest.raises(
            ValueError, match="Received: x with ids from 3 to 3"
        ):
            reloaded.predict(np.full((1, 8), 3, "int32"), verbose=0)

    def test_encodings_match_numpy_reference(self):
        # Independent float64 forward of the whole tree from the weights.
        model = _small(sharing="none")
        x = _ids()
        table = keras.ops.convert_to_numpy(model.encodings(x))
        s = model.segments
        emb = keras.ops.convert_to_numpy(model.token_encoder.table)
        tw2, tb2 = [
            keras.ops.convert_to_numpy(w)
            for w in model.token_encoder.weights[1:]
        ]
        fw = [
            keras.ops.convert_to_numpy(w) for w in model.fusion_encoder.weights
        ]
        enc = {}
        for i in range(1, 9):
            h = np.maximum(emb[i - 1][x[:, i - 1]], 0)
            enc[(i, i)] = np.tanh(h @ tw2[i - 1] + tb2[i - 1])
        for k, (i, j) in enumerate(s.segments[8:]):
            m = s.sigma[(i, j)]
            inp = np.concatenate([enc[(i, m)], enc[(m + 1, j)]], -1)
            out, _ = _mlp(inp, fw[0][k], fw[1][k], fw[2][k], fw[3][k], np.tanh)
            enc[(i, j)] = out
        for k, segment in enumerate(s.segments):
            self.assertAllClose(table[:, k + 1], enc[segment], atol=1e-5)
        self.assertAllClose(table[:, 0], np.zeros_like(table[:, 0]))

    def test_gradient_of_each_pair_is_the_papers_update(self):
        # N = 4, one parameterisation per segment. For every segment, the
        # gradient that `fit` uses must equal the gradient of that pair's
        # own loss with every input encoding held constant (Sec. 9),
        # computed here by hand in float64 numpy.
        model = _small(sequence_length=4, sharing="none")
        x = _ids(batch=6, length=4, seed=1)
        y = np.array([0, 1, 1, 0, 1, 0], "float32")
        model(x)
        loss, grads = _loss_and_gradients(model, x, y)
        s = model.segments
        weights = {
            v.path: np.asarray(keras.ops.convert_to_numpy(v), "float64")
            for v in model.weights
        }
        name = model.name
        emb = weights[f"{name}/token_encoder/table"]
        tw, tb = (
            weights[f"{name}/token_encoder/kernel_1"],
            weights[f"{name}/token_encoder/bias_1"],
        )
        fw = [
            weights[f"{name}/fusion_encoder/{p}"]
            for p in ("kernel_0", "bias_0", "kernel_1", "bias_1")
        ]
        dw = [
            weights[f"{name}/decoder/{p}"]
            for p in ("kernel_0", "bias_0", "kernel_1", "bias_1")
        ]
        batch = len(x)
        enc, caches = {}, {}
        for i in range(1, 5):
            h = emb[i - 1][x[:, i - 1]]
            z1 = h
            a1 = np.maximum(z1, 0)
            z2 = a1 @ tw[i - 1] + tb[i - 1]
            enc[(i, i)] = np.tanh(z2)
            caches[(i, i)] = (z1, a1, z2)
        for k, (i, j) in enumerate(s.segments[4:]):
            m = s.sigma[(i, j)]
            inp = np.concatenate([enc[(i, m)], enc[(m + 1, j)]], -1)
            p = [w[k] for w in fw]
            enc[(i, j)], caches[(i, j)] = _mlp(inp, *p, np.tanh)
        zero = np.zeros_like(enc[(1, 1)])
        total = 0.0
        for k, (i, j) in enumerate(s.segments):
            before = zero if i == 1 else enc[(1, i - 1)]
            after = zero if j == 4 else enc[(j + 1, 4)]
            inp = np.concatenate([before, enc[(i, j)], after], -1)
            p = [w[k] for w in dw]
            prob, cache = _mlp(inp, *p, _sigmoid)
            prob = prob[:, 0]
            total += -np.mean(y * np.log(prob) + (1 - y) * np.log(1 - prob))
            # Decoder theta_ij: gradient of the pair's mean BCE.
            dz2 = ((prob - y) / batch)[:, None]
            g = _mlp_backward(cache, p[0], p[2], dz2)
            for key, pname in (
                ("w1", "kernel_0"),
                ("b1", "bias_0"),
                ("w2", "kernel_1"),
                ("b2", "bias_1"),
            ):
                path = f"{name}/decoder/{pname}"
                self.assertAllClose(
                    grads[path][k], g[key], atol=1e-5, rtol=1e-4
                )
            # h_ij: gradient with respect to the segment's own encoding.
            e = enc[(i, j)].shape[1]
            h_ij = g["x"][:, e : 2 * e]
            # Encoder: psi_ij (or phi_i) along h_ij, inputs held constant.
            if i == j:
                z1, a1, z2 = caches[(i, j)]
                dz2e = h_ij * (1 - np.tanh(z2) ** 2)
                self.assertAllClose(
                    grads[f"{name}/token_encoder/kernel_1"][i - 1],
                    a1.T @ dz2e,
                    atol=1e-5,
                    rtol=1e-4,
                )
                dz1 = (dz2e @ tw[i - 1].T) * (z1 > 0)
                expected_table = np.zeros_like(emb[i - 1])
                np.add.at(expected_table, x[:, i - 1], dz1)
                self.assertAllClose(
                    grads[f"{name}/token_encoder/table"][i - 1],
                    expected_table,
                    atol=1e-5,
                    rtol=1e-4,
                )
            else:
                f = k - 4
                p = [w[f] for w in fw]
                cache = caches[(i, j)]
                dz2e = h_ij * (1 - np.tanh(cache[3]) ** 2)
                ge = _mlp_backward(cache, p[0], p[2], dz2e)
                for key, pname in (
                    ("w1", "kernel_0"),
                    ("b1", "bias_0"),
                    ("w2", "kernel_1"),
                    ("b2", "bias_1"),
                ):
                    self.assertAllClose(
                        grads[f"{name}/fusion_encoder/{pname}"][f],
                        ge[key],
                        atol=1e-5,
                        rtol=1e-4,
                    )
        # The training loss is the sum over segments of the mean loss.
        self.assertAllClose(loss, total, atol=1e-4, rtol=1e-4)

        # End-to-end back-propagation gives other gradients for the encoders
        # (so the comparison above can fail) but the same loss.
        e2e = _small(sequence_length=4, sharing="none", gradient="end_to_end")
        e2e(x)
        e2e.set_weights(model.get_weights())
        loss_e2e, grads_e2e = _loss_and_gradients(e2e, x, y)
        self.assertAllClose(loss_e2e, loss, atol=1e-5)
        path = f"{name}/fusion_encoder/kernel_0"
        other = grads_e2e[path.replace(name, e2e.name)]
        self.assertNotAllClose(other, grads[path], atol=1e-6)
        path = f"{name}/decoder/kernel_0"
        self.assertAllClose(
            grads_e2e[path.replace(name, e2e.name)], grads[path]
        )

    def test_token_count_loss_is_local(self):
        # N = 4, one parameterisation per segment. The auxiliary loss adds,
        # to the gradient of the fusion encoder of segment k, only the
        # back-propagation of segment k's own count error (its inputs are
        # constants), and to the readout the sum over segments; both are
        # computed here by hand in float64 numpy.
        weight = 0.5
        x = _ids(batch=6, length=4, seed=4)
        y = np.array([0, 1, 1, 0, 1, 0], "float32")
        base = _small(sequence_length=4, sharing="none")
        base(x)
        aux = _small(
            sequence_length=4,
            sharing="none",
            token_count_loss_weight=weight,
        )
        aux(x)
        aux.set_weights(base.get_weights() + aux.count_readout.get_weights())
        loss_base, g_base = _loss_and_gradients(base, x, y)
        loss_aux, g_aux = _loss_and_gradients(aux, x, y)
        s = aux.segments
        table = np.asarray(keras.ops.convert_to_numpy(aux.encodings(x)))
        enc = table[:, 1:].astype("float64")
        counts = np.stack(
            [
                np.stack([(x[:, i - 1 : j] == v).sum(1) for v in range(3)], -1)
                for i, j in s.segments
            ],
            1,
        ).astype("float64")
        self.assertAllClose(aux.segment_token_counts(x), counts)
        kernel, bias = (
            np.asarray(keras.ops.convert_to_numpy(w), "float64")
            for w in aux.count_readout.weights
        )
        n, batch, vocab, count = 4, len(x), 3, s.num_segments
        error = n * (enc @ kernel + bias) - counts  # [batch, |S|, vocab]
        self.assertAllClose(
            aux.predicted_token_counts(x), n * (enc @ kernel + bias), atol=1e-5
        )
        # Summed over segments of the mean over batch and vocabulary.
        expected = weight * np.mean(error**2) * count
        self.assertAllClose(loss_aux - loss_base, expected, rtol=1e-4)
        d_error = weight * 2 * error / (batch * vocab)  # d loss / d error
        readout = aux.count_readout.kernel.path
        self.assertAllClose(
            g_aux[readout],
            n * np.einsum("bse,bsv->ev", enc, d_error),
            atol=1e-5,
            rtol=1e-4,
        )
        d_enc = n * d_error @ kernel.T  # [batch, |S|, encoding_dim]
        fw = [
            np.asarray(keras.ops.convert_to_numpy(w), "float64")
            for w in aux.fusion_encoder.weights
        ]
        for k, (i, j) in enumerate(s.segments[4:]):
            m = s.sigma[(i, j)]
            left, right = s.index[(i, m)], s.index[(m + 1, j)]
            inp = np.concatenate([table[:, left], table[:, right]], -1)
            p = [w[k] for w in fw]
            out, cache = _mlp(inp.astype("float64"), *p, np.tanh)
            self.assertAllClose(out, enc[:, k + 4], atol=1e-5)
            dz2 = d_enc[:, k + 4] * (1 - out**2)
            expected = _mlp_backward(cache, p[0], p[2], dz2)
            for key, pname in (("w1", "kernel_0"), ("w2", "kernel_1")):
                path = f"{aux.name}/fusion_encoder/{pname}"
                other = path.replace(aux.name, base.name)
                self.assertAllClose(
                    g_aux[path][k] - g_base[other][k],
                    expected[key],
                    atol=1e-5,
                    rtol=1e-4,
                )
        # The decoders do not see the auxiliary loss.
        path = f"{aux.name}/decoder/kernel_0"
        self.assertAllClose(
            g_aux[path], g_base[path.replace(aux.name, base.name)], atol=1e-6
        )
        # A padded length counts no id at the padding positions.
        padded = _small(sequence_length=3, token_count_loss_weight=1.0)
        x3 = _ids(batch=2, length=3, seed=5)
        got = keras.ops.convert_to_numpy(padded.segment_token_counts(x3))
        root = padded.segments.index[(1, 4)] - 1
        self.assertAllClose(got[:, root].sum(-1), [3, 3])
        with pytest.raises(ValueError, match="token_count_loss_weight"):
            base.predicted_token_counts(x)

    def test_segment_learning_rates(self):
        model = _small(sequence_length=4, sharing="none")
        x = _ids(batch=6, length=4, seed=2)
        y = np.array([0, 1, 1, 0, 1, 0], "float32")
        model(x)
        count = model.segments.num_segments
        rng = np.random.default_rng(0)
        rates = rng.uniform(0.5, 2.0, size=(count, 2))
        scaled = _small(
            sequence_length=4, sharing="none", segment_learning_rates=rates
        )
        scaled(x)
        scaled.set_weights(model.get_weights())
        _, base = _loss_and_gradients(model, x, y)
        _, grads = _loss_and_gradients(scaled, x, y)
        n, m = model.name, scaled.name
        for k in range(count):
            self.assertAllClose(
                grads[f"{m}/decoder/kernel_1"][k],
                rates[k, 0] * base[f"{n}/decoder/kernel_1"][k],
                atol=1e-6,
                rtol=1e-4,
            )
        for k in range(4, count):
            self.assertAllClose(
                grads[f"{m}/fusion_encoder/kernel_1"][k - 4],
                rates[k, 1] * base[f"{n}/fusion_encoder/kernel_1"][k - 4],
                atol=1e-6,
                rtol=1e-4,
            )
        for i in range(4):
            self.assertAllClose(
                grads[f"{m}/token_encoder/kernel_1"][i],
                rates[i, 1] * base[f"{n}/token_encoder/kernel_1"][i],
                atol=1e-6,
                rtol=1e-4,
            )

    def test_fit_evaluate_predict(self):
        x = _ids(batch=32, length=8, seed=3)
        y = (x == 1).sum(1) % 2
        for sharing in ["none", "all"]:
            model = _small(sharing=sharing)
            model(x[:1])
            model.compile(
                optimizer="adam",
                loss="binary_crossentropy",
                metrics=["accuracy"],
            )
            before = [keras.ops.convert_to_numpy(w) for w in model.weights]
            history = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
            # The training loss is the sum of |S| = 25 per-segment losses.
            self.assertGreater(history.history["loss"][0], 25 * 0.5)
            result = model.evaluate(x, y, verbose=0, return_dict=True)
            self.assertLess(result["loss"], 1.0)
            self.assertEqual(model.predict(x, verbose=0).shape, (32, 1))
            changed = [
                not np.allclose(b, keras.ops.convert_to_numpy(w))
                for b, w in zip(before, model.weights, strict=True)
            ]
            self.assertTrue(all(changed))

    def test_saving(self):
        x = _ids(length=6)
        model = _small(
            sequence_length=6, sharing="level", token_count_loss_weight=0.3
        )
        model(x)
        self.run_model_saving_test(model, x)
        self.run_weights_roundtrip_test(model, x)
        config = model.get_config()
        self.assertEqual(
            FusionEncoderNetwork.from_config(config).get_config(), config
        )

    def test_golden(self):
        self.assert_golden("fusion_encoder_network")
        self.assert_cross_backend_load("fusion_encoder_network")

    def test_bad_arguments(self):
        cases = [
            (dict(sequence_length=0), "sequence_length"),
            (dict(vocabulary_size=-1), "vocabulary_size"),
            (dict(sharing="tree"), "sharing"),
            (dict(gradient="global"), "gradient"),
            (dict(segment_loss_reduction="max"), "segment_loss_reduction"),
            (dict(decoder_units=[0]), "decoder_units"),
            (dict(segment_learning_rates=np.ones((3, 2))), "segment_learning"),
            (dict(token_count_loss_weight=-1.0), "token_count_loss_weight"),
            (dict(token_count_loss_weight=np.nan), "token_count_loss_weight"),
        ]
        for kwargs, match in cases:
            with pytest.raises(ValueError, match=match):
                _small(**kwargs)
        model = _small()
        with pytest.raises(ValueError, match=r"inputs.shape=\(2, 5\)"):
            model(np.zeros((2, 5), "int32"))

    def test_token_ids_are_checked(self):
        # Length 3 is padded to 4 with the learned padding token, id 3
        # (= vocabulary_size): an input id 3 would be read as padding, and
        # a negative one wrap around to another row.
        model = _small(sequence_length=3, sharing="all")
        model(np.zeros((1, 3), "int32"))
        fused = model.fuse()
        model.compile(optimizer="sgd", loss="binary_crossentropy")
        y = np.zeros((1, 1), "float32")
        before = [keras.ops.convert_to_numpy(w) for w in model.weights]
        for bad, low, high in (
            ([[1, 3, 0]], 0, 3),
            ([[1, -1, 2]], -1, 2),
        ):
            bad = np.array(bad, "int32")

            def message(name, low=low, high=high):
                return re.escape(
                    f"`{name}` must hold token ids in [0, 2] "
                    f"(vocabulary_size=3). Received: {name} with ids from "
                    f"{low} to {high}"
                )

            for call in (
                model,
                model.segment_outputs,
                model.encodings,
                model.segment_token_counts,
                fused,
            ):
                with pytest.raises(ValueError, match=message("inputs")):
                    call(bad)
            for step in (
                lambda bad=bad: model.predict(bad, verbose=0),
                lambda bad=bad: fused.predict(bad, verbose=0),
                lambda bad=bad: model.predict_on_batch(bad),
                lambda bad=bad: model.evaluate(bad, y, verbose=0),
                lambda bad=bad: model.fit(bad, y, verbose=0),
                lambda bad=bad: model.train_on_batch(bad, y),
            ):
                with pytest.raises(ValueError, match=message("x")):
                    step()
        for old, new in zip(before, model.weights, strict=True):
            self.assertAllClose(old, keras.ops.convert_to_numpy(new))
        floats = np.array([[1.9, 2.0, 0.0]], "float32")
        with pytest.raises(TypeError, match="`inputs` must hold integer"):
            model(floats)
        with pytest.raises(TypeError, match="`x` must hold integer"):
            model.predict(floats, verbose=0)

    def test_length_one_and_two(self):
        for length in [1, 2, 3]:
            model = _small(sequence_length=length, sharing="none")
            x = _ids(length=length)
            y = keras.ops.convert_to_numpy(model(x))
            self.assertAllClose(model.fuse()(x), y, atol=1e-6)
