"""The two-sample task (Selby et al., UAI 2022, Sec. 5.2.3, Table 4).

Pairs of sets of 10-30 points in d = 8, both from one random Gaussian
mixture (label 1) or from two (label 0), half and half
(`keras_msets.data.mixtures.two_sample_pairs`), whitened jointly
(`whiten_pairs`; ours, the paper whitens only the KL data). Loss: binary
cross-entropy (App. B names none); App. B's batch of 256 at 1e-5 for
7,500 batches.
"""

import numpy as np

from keras_msets.data import mixtures
from keras_msets.stats import preprocessing
from keras_msets.training import card
from keras_msets.training.tasks.set_task import TEST_SEED
from keras_msets.training.tasks.set_task import SetTask
from keras_msets.training.tasks.set_task import predict_sets
from keras_msets.training.tasks.set_task import print_metrics
from keras_msets.training.tasks.set_task import total_steps

TWO_SAMPLE_DIM = 8
PAPER_TWO_SAMPLE_ACCURACY = 0.7289  # Table 4, synthetic, +- 0.0353


class TwoSample(SetTask):
    """Whether two sets were drawn from the same distribution.

    Args:
        dims: the training dimensions (the paper's d = 8).
        test_size: test pairs.
        target: the accuracy the card measures the model against.
        default_dims: `(lo, hi)`, the `d` the default estimator sends to
            the preset.
    """

    name = "two_sample"
    estimator = "same_distribution_probability"
    preprocessing = "whiten"
    symmetric = True
    loss = "binary_crossentropy"
    metrics = ("accuracy",)
    set_size = (10, 30)
    paper_steps = 7_500
    defaults = {"batch_size": 256, "learning_rate": 1e-5, "seed": 0}

    def __init__(
        self,
        dims=(TWO_SAMPLE_DIM,),
        test_size=2000,
        target=None,
        default_dims=None,
    ):
        super().__init__(dims, dims, test_size, default_dims)
        self.target = target

    def pairs(self, num, dim, seed, set_size):
        return mixtures.two_sample_pairs(num, dim, seed=seed, set_size=set_size)

    def data_description(self, budget=None):
        return (
            "pairs of sets of 10-30 points in d = 8: both from one random "
            "Gaussian mixture (label 1) or from two (label 0), half and "
            "half (Selby et al. Sec. 5.2.3 and 5.1.1), whitened jointly "
            "(eq. 15, then a canonical rotation); fresh pairs every batch"
        )

    def evaluate_pairs(self, model, num=None, seed=TEST_SEED, batch_size=256):
        """Accuracy (`p > 0.5` against the label) on fresh pairs.

        `p` is what `same_distribution_probability` answers: the mean of
        the model's probabilities for `(x, y)` and for `(y, x)`, each pair
        whitened in that order. Also `accuracy_same`, `accuracy_different`
        (each half) and `accuracy_one_order` (the model's own answer for
        `(x, y)` alone).
        """
        raw, inputs, targets = self.test_set(num or self.test_size, None, seed)
        one_order = predict_sets(model, inputs, batch_size, clip=False)
        x, y, x_mask, y_mask = raw
        wy, wx = preprocessing.preprocess(
            self.preprocessing, y, x, y_mask, x_mask
        )
        swapped = {"sets": (wy, wx), "masks": (y_mask, x_mask)}
        p = 0.5 * (one_order + predict_sets(model, swapped, batch_size, False))
        truth = targets[:, 0] > 0.5
        right = (p > 0.5) == truth
        return {
            "accuracy": float(np.mean(right)),
            "accuracy_same": float(np.mean(right[truth])),
            "accuracy_different": float(np.mean(right[~truth])),
            "accuracy_one_order": float(np.mean((one_order > 0.5) == truth)),
        }

    def evaluate(self, model, verbose=1):
        metrics = self.evaluate_pairs(model)
        print_metrics(metrics, verbose)
        return metrics

    def use_text(self, recipe):
        return f"""```python
import keras_msets
from keras_msets.estimators import pretrained

p = pretrained.same_distribution_probability(x, y, model="{recipe.name}")
model = keras_msets.zoo.load("{recipe.name}")  # the raw model
```

- Input of the estimator: numpy arrays `x` `[n, 8]` and `y` `[m, 8]`, at
  least 9 points each (trained on 10-30), or batches of them. Both sets
  are whitened jointly first (eq. 15, then a rotation to canonical axes),
  so the answer is invariant under an invertible affine map applied to
  both. The estimator averages the model's probabilities for `(x, y)`
  and `(y, x)` (ours: the question is symmetric).
- Input of the model: `{{"sets": [x, y], "masks": [x_mask, y_mask]}}`,
  whitened float32 `[batch, n, 8]` and boolean `[batch, n]`.
- Output: `[batch, 1]`, the probability of "same distribution"."""

    def card_sections(self, recipe, metrics):
        return card.wrap(self.results_text(metrics))

    def results_text(self, metrics):
        accuracy = metrics["accuracy"]
        one_order = metrics.get("accuracy_one_order")
        one_order = "not measured" if one_order is None else f"{one_order:.4f}"
        verdict = ""
        if self.target is not None:
            verdict = (
                f"Target: accuracy >= {self.target}. It "
                + ("reaches" if accuracy >= self.target else "does NOT reach")
                + f" it ({accuracy:.4f}) after {total_steps(metrics):,} "
                "training batches (the paper: 7,500 of 256)."
            )
        return f"""{self.test_size:,} fresh test pairs never seen in training
(seed 2**32 + 8), half from one mixture, half from two; a pair is called "same"
when the probability is above 0.5. The probability is the estimator's
(the mean over both orders of the sets); the last row is the model's own
answer for `(x, y)` alone.

| | this model | paper, Multi-Set Transformer (Table 4) |
|---|---|---|
| accuracy | {accuracy:.4f} | {PAPER_TWO_SAMPLE_ACCURACY} +- 0.0353 |
| accuracy, same pairs | {metrics["accuracy_same"]:.4f} | |
| accuracy, different pairs | {metrics["accuracy_different"]:.4f} | |
| accuracy, model alone, one order | {one_order} | |

{verdict}"""
