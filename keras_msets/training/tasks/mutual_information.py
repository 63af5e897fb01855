"""The mutual-information tasks (Selby et al., UAI 2022, Sec. 5.1.2).

100-150 joint samples of Gaussians with standard normal marginals and
componentwise correlation `rho` (uniform in [-0.999, 0.999]), label
`-(d/2) log(1 - rho^2)` (`keras_msets.data.mixtures.
mutual_information_sets`). Two readings:

- `MutualInformation`, the paper's: the set of the `x_j` and the set of
  the `y_j`, each coordinate standardized per set (`standardize_pairs`).
  Loss: mean squared error (the authors' code) of the MI per coordinate:
  the model scales its output by `d` (`scale_output_by_dim=True`, ours)
  and each batch of dimension `d` has sample weight `d**-2`, so that every
  `d` weighs the same (`benchmarks/RESULTS.md`, MI section).
- `JointMutualInformation`, ours: `I(X; Y) = KL(P_XY || P_X P_Y)`, the
  joint samples `[x_j, y_j]` against `[x_j, y_pi(j)]` (`y` permuted within
  the set), whitened as a KL pair with each axis oriented by its third
  moment; the KL task's loss (mean absolute error). Unlike the split sets
  it uses the pairing, which makes d = 1..8 learnable.

The card measures the model beside the KSG estimator of Kraskov et al.
(k = 3) on the paired rows of the same samples.
"""

import numpy as np

from keras_msets.data import mixtures
from keras_msets.stats import classical
from keras_msets.stats import preprocessing
from keras_msets.training import card
from keras_msets.training.tasks.set_task import TEST_SEED
from keras_msets.training.tasks.set_task import SetTask
from keras_msets.training.tasks.set_task import dims_text
from keras_msets.training.tasks.set_task import markdown_table
from keras_msets.training.tasks.set_task import predict_sets
from keras_msets.training.tasks.set_task import print_metrics
from keras_msets.training.tasks.set_task import read_pairs
from keras_msets.training.tasks.set_task import verdict_text


class MutualInformation(SetTask):
    """Estimate `I(X; Y)` from the set of `x_j` and the set of `y_j`.

    Args:
        dims, test_dims, test_size, default_dims: as `SetTask`'s.
    """

    name = "mutual_information"
    estimator = "mutual_information"
    preprocessing = "standardize"
    paired = True
    mode = "split"
    loss = "mean_squared_error"
    dim_weight_power = -2

    def __init__(
        self,
        dims=tuple(range(2, 21)),
        test_dims=(2, 10, 20),
        test_size=1000,
        default_dims=None,
    ):
        super().__init__(dims, test_dims, test_size, default_dims)

    def pairs(self, num, dim, seed, set_size):
        return mixtures.mutual_information_sets(
            num, dim, seed=seed, set_size=set_size, mode=self.mode
        )

    def data_description(self, budget=None):
        return (
            "100-150 joint samples (x_i, y_i) of Gaussians in d = "
            f"{self.dims[0]}..{self.dims[-1]} with standard normal marginals "
            "and corr(x_j, y_j) = rho, rho uniform in [-0.999, 0.999] "
            "(Selby et al. Sec. 5.1.2), shown as the set of x_i and the set "
            "of y_i, each coordinate standardized per set; label -(d/2) "
            "log(1 - rho^2), the model's output is its decoder's times d "
            "and the squared error has sample weight d**-2 (the error per "
            "coordinate); fresh pairs every batch"
        )

    def paired_rows(self, raw, d):
        """`(x, y, mask)`: the paired rows of a test set's raw samples."""
        return raw[0], raw[1], raw[2]

    def evaluate_dims(
        self, model, dims=None, num=None, seed=TEST_SEED, batch_size=64
    ):
        """MAE per dimension beside KSG on the same samples.

        Keys `mae_d{d}`, `ksg_mae_d{d}` and `median_mae_d{d}` (always
        answering the median test label of that `d`).
        """
        metrics = {}
        for d in dims or self.test_dims:
            raw, inputs, targets = self.test_set(num or self.test_size, d, seed)
            truth = targets[:, 0].astype(np.float64)
            predicted = predict_sets(model, inputs, batch_size)
            x, y, mask = self.paired_rows(raw, d)
            ksg = classical.ksg_mutual_information_sets(x, y, mask, k=3)
            metrics[f"mae_d{d}"] = float(np.mean(np.abs(predicted - truth)))
            metrics[f"ksg_mae_d{d}"] = float(np.mean(np.abs(ksg - truth)))
            metrics[f"median_mae_d{d}"] = float(
                np.mean(np.abs(np.median(truth) - truth))
            )
        return metrics

    def evaluate(self, model, verbose=1):
        metrics = self.evaluate_dims(model)
        print_metrics(metrics, verbose)
        return metrics

    def use_text(self, recipe):
        default = (
            ""
            if self.default_dims is None
            else "mi = pretrained.mutual_information(x, y)  # x, y [n, d]; "
            f"{self.route_text()}\n"
        )
        rows = "at least 2d + 1 rows" if self.joint else "at least d + 1 rows"
        return f"""```python
import keras_msets
from keras_msets.estimators import pretrained

{default}mi = pretrained.mutual_information(x, y, model="{recipe.name}")
model = keras_msets.zoo.load("{recipe.name}")  # the raw model
```

- Input of the estimator: numpy arrays `x` and `y`, `[n, d]` each, row j
  of both one joint sample, {dims_text(self.dims)}, {rows} (trained on
  100-150). {self.reading_text()}
- Trained on Gaussians with standard normal marginals and componentwise
  correlation (`corr(x_j, y_j) = rho`, all other pairs uncorrelated);
  other dependence structures are outside what it has seen.
- Output: `[batch, 1]`, the MI in nats (the estimator clips it at 0). No
  weight depends on d."""

    def reading_text(self):
        return (
            "Each coordinate of each set is standardized first. As in the "
            "paper the model reads the set of `x` and the set of `y` "
            '(`{"sets": [x, y], "masks": [x_mask, y_mask]}`), not the '
            "pairing of their rows; its output is its decoder's times d "
            "(`scale_output_by_dim=True`, ours)."
        )

    def card_sections(self, recipe, metrics):
        return card.wrap(self.results_text(metrics))

    def results_text(self, metrics):
        dims = self.test_dims
        split = (
            None if getattr(self, "split", None) is None else (self.split[0])
        )
        permutations = getattr(self, "estimator_permutations", None)
        header = "| d | this model |"
        if permutations:
            header += f" `mutual_information`, mean of {permutations} |"
        header += " KSG (same pairs) |"
        if split:
            header += f" `{split}` (same pairs) |"
        header += " best constant |"
        rows = []
        for d in dims:
            row = f"| {d} | {metrics[f'mae_d{d}']:.4f} |"
            if permutations:
                value = metrics.get(f"estimator_mae_d{d}")
                row += " - |" if value is None else f" {value:.4f} |"
            row += f" {metrics[f'ksg_mae_d{d}']:.4f} |"
            if split:
                value = metrics.get(f"split_mae_d{d}")
                row += (
                    " (d = 1 not taken) |"
                    if value is None
                    else (f" {value:.4f} |")
                )
            row += f" {metrics[f'median_mae_d{d}']:.4f} |"
            rows.append(row)
        comparisons = [("ksg", "KSG")]
        if split:
            comparisons.append(("split", f"`{split}`"))
        verdict = verdict_text(metrics, dims, *comparisons)
        return f"""Fresh test pairs never seen in training ({
            self.test_size:,} per dimension,
`rho` uniform in [-0.999, 0.999], generator seed 2**32 + d), mean
absolute error in nats. KSG is the estimator of Kraskov et al. (k = 3) on
the paired rows of the same samples, in the same run.{
            self.columns_text(permutations, split)
        } The paper shows its results only as a plot (Fig. 2: its model is
worse than KSG at d = 2 and "almost indistinguishable from the ground
truth" at d = 10 and 20).

{markdown_table(header, rows)}

{verdict}"""

    def columns_text(self, permutations, split):
        return ""


class JointMutualInformation(MutualInformation):
    """Estimate `I(X; Y)` as `KL(P_XY || P_X P_Y)` (ours).

    Args:
        dims, test_dims, test_size, default_dims: as `SetTask`'s.
        split: None, or `(preset name, loader)` of a model of the split
            reading measured on the same samples (at d >= 2, the
            dimensions it takes; `loader()` returns None when it is not
            installed).
        estimator_permutations: the number of permutations the estimator
            averages over (`estimator_mae_d{d}`); None: not measured.
        start: the preset whose weights the first run started from (the
            card's text).
    """

    name = "mutual_information_joint"
    estimator = "mutual_information"
    preprocessing = "whiten_third_moment"
    joint = True
    mode = "joint_vs_product"
    loss = "mean_absolute_error"
    dim_weight_power = 0

    def __init__(
        self,
        dims=tuple(range(1, 9)),
        test_dims=(1, 2, 4, 6, 8),
        test_size=1000,
        default_dims=None,
        split=None,
        estimator_permutations=None,
        start=None,
    ):
        super().__init__(dims, test_dims, test_size, default_dims)
        self.split = split
        self.estimator_permutations = estimator_permutations
        self.start = start

    def data_description(self, budget=None):
        text = (
            "100-150 joint samples (x_i, y_i) of Gaussians in d = "
            f"{self.dims[0]}..{self.dims[-1]} with standard normal marginals "
            "and corr(x_j, y_j) = rho, rho uniform in [-0.999, 0.999] "
            "(Selby et al. Sec. 5.1.2), shown as the set of [x_i, y_i] "
            "against the set of [x_i, y_pi(i)] (y permuted within the set), "
            "whitened jointly (eq. 15) and rotated (axes oriented by the "
            "third moment); label -(d/2) log(1 - rho^2); fresh pairs every "
            "batch"
        )
        if self.start:
            text += f"; initial weights: the {self.start} preset"
        return text

    def paired_rows(self, raw, d):
        # The first set is [x_j, y_j].
        return raw[0][..., :d], raw[0][..., d:], raw[2]

    def estimator_answers(self, model, x, y, mask, batch_size=64):
        """What the joint estimator answers: the mean over
        `estimator_permutations` readings, permutation `k` seeded with
        `JOINT_PERMUTATION_SEED + k` (clipped at 0)."""
        rows = [m.astype(bool) for m in mask]
        x_sets = [xs[keep] for xs, keep in zip(x, rows, strict=True)]
        y_sets = [ys[keep] for ys, keep in zip(y, rows, strict=True)]
        readings = []
        for k in range(self.estimator_permutations):
            joint, product = preprocessing.joint_and_product_sets(
                x_sets, y_sets, seed=preprocessing.JOINT_PERMUTATION_SEED + k
            )
            readings.append(
                read_pairs(
                    model, joint, product, self.preprocessing, batch_size
                )
            )
        return np.maximum(np.mean(readings, axis=0), 0.0)

    def evaluate_dims(
        self, model, dims=None, num=None, seed=TEST_SEED, batch_size=64
    ):
        """`MutualInformation.evaluate_dims`'s keys, and `split_mae_d{d}`
        (the split model, d >= 2) and `estimator_mae_d{d}` (the estimator's
        mean over permutations) on the same joint samples."""
        metrics = super().evaluate_dims(model, dims, num, seed, batch_size)
        split = None if self.split is None else self.split[1]()
        split_task = MutualInformation()
        for d in dims or self.test_dims:
            raw, _, targets = self.test_set(num or self.test_size, d, seed)
            truth = targets[:, 0].astype(np.float64)
            if split is not None and d >= 2:
                _, inputs, _ = split_task.test_set(
                    num or self.test_size, d, seed
                )
                answers = predict_sets(split, inputs, batch_size)
                metrics[f"split_mae_d{d}"] = float(
                    np.mean(np.abs(answers - truth))
                )
            if self.estimator_permutations is not None:
                x, y, mask = self.paired_rows(raw, d)
                answers = self.estimator_answers(model, x, y, mask, batch_size)
                metrics[f"estimator_mae_d{d}"] = float(
                    np.mean(np.abs(answers - truth))
                )
        return metrics

    def reading_text(self):
        return (
            "The estimator builds the joint samples `[x_j, y_j]` and the "
            "product samples `[x_j, y_pi(j)]` (`joint_and_product_sets`), "
            "whitens them jointly (each axis oriented by its third moment) "
            "and averages the model's readings over several permutations; "
            'the model reads `{"sets": [joint, product], "masks": [mask, '
            "mask]}`, float32 `[batch, n, 2d]`."
        )

    def columns_text(self, permutations, split):
        text = (
            ' "This model" reads the generator\'s product samples (one '
            "permutation), as in training"
        )
        if permutations:
            text += (
                "; `mutual_information` is what the estimator answers for "
                f"the same joint samples, the mean of {permutations} "
                "permutations"
            )
        if split:
            text += f"; `{split}` is the paper's reading of the same samples"
        return text + "."
