"""Recipe of the `mst_mutual_information_joint` preset.

Ours, not the paper's: the mutual information read as a KL divergence,
`I(X; Y) = KL(P_XY || P_X P_Y)`. A dimension-equivariant Multi-Set
Transformer (Selby et al., UAI 2022, Sec. 3.5) reads the 100-150 joint
samples `[x_j, y_j]` against the same rows with the `y` part permuted
within the set, `[x_j, y_pi(j)]` (the `"joint_vs_product"` mode of
`keras_msets.data.mutual_information_sets`), both whitened as a KL pair.
It starts from the weights of the `mst_kl_divergence` preset (the same
architecture) and is fine-tuned on correlated Gaussians in d = 1..8
(joint dimension 2..16, the KL preset's range). The paper's way, two
unpaired sets (`mst_mutual_information`), cannot see the pairing and has
not learned d = 2; this preset serves
`keras_msets.estimators.mutual_information` for d = 1..8. Train it with

    KERAS_BACKEND=tensorflow python zoo/mst_mutual_information_joint/recipe.py

then `keras-msets zoo train mst_mutual_information_joint` re-runs it. It
writes the preset folder (default: next to this file).
"""

from keras_msets import zoo
from keras_msets.estimators import pretrained
from keras_msets.zoo import mst_recipe

NAME = "mst_mutual_information_joint"
TASK = "mutual_information_joint"
DIMS = tuple(range(1, 9))
TEST_DIMS = (1, 2, 4, 6, 8)
INIT_FROM = "mst_kl_divergence"
SPLIT_PRESET = "mst_mutual_information"
DEFAULT_STEPS = 1000
LEARNING_RATE = 3e-4
TEST_SIZE = 1000
SEED = 0


def build_model(**overrides):
    """The KL preset's model: App. B's 16 channels and feedforward 32 per
    input dimension, dimension-equivariant."""
    return mst_recipe.build_model(TASK, name=NAME, **overrides)


def evaluate(model, verbose=1, num=TEST_SIZE, seed=mst_recipe.TEST_SEED):
    """MAE at d = 1, 2, 4, 6, 8 beside KSG and the split preset, same pairs;
    and the estimator's (the mean over `pretrained.JOINT_PERMUTATIONS`
    permutations of the same joint samples).

    The split preset (`mst_mutual_information`) is scored when the zoo has
    it (at d >= 2, the dimensions it takes).
    """
    split = zoo.load(SPLIT_PRESET) if SPLIT_PRESET in zoo.list() else None
    return mst_recipe.evaluate_mutual_information(
        model,
        dims=TEST_DIMS,
        num=num,
        seed=seed,
        verbose=verbose,
        task=TASK,
        split_model=split,
        estimator_permutations=pretrained.JOINT_PERMUTATIONS,
    )


# `before_fit`: copy the KL preset's weights into the model.
_start_from_kl_preset = mst_recipe.start_from_preset(INIT_FROM)


def train(output_dir=None, steps=None, init_from=INIT_FROM, **options):
    """Trains, evaluates, saves; `options`: `mst_recipe.train_recipe`'s.

    `init_from`: the KL preset whose weights the run starts from, or None
    (random initial weights; tests with tiny models).
    """
    if init_from is not None:
        if init_from != INIT_FROM:
            raise ValueError(
                f"`init_from` must be None or {INIT_FROM!r}. Received: "
                f"init_from={init_from!r}"
            )
        options.setdefault("before_fit", _start_from_kl_preset)
    return mst_recipe.train_recipe(
        globals(),
        data=(
            "100-150 joint samples (x_i, y_i) of Gaussians in d = 1..8 "
            "with standard normal marginals and corr(x_j, y_j) = rho, rho "
            "uniform in [-0.999, 0.999] (Selby et al. Sec. 5.1.2), shown "
            "as the set of [x_i, y_i] against the set of [x_i, y_pi(i)] "
            "(y permuted within the set), whitened jointly (eq. 15) and "
            "rotated (axes oriented by the third moment); label "
            "-(d/2) log(1 - rho^2); fresh pairs every batch; "
            f"initial weights: the {INIT_FROM} preset"
        ),
        dims=DIMS,
        output_dir=output_dir,
        steps=steps,
        **options,
    )


HEADER = (
    "| d | this model, one permutation | `mutual_information`, mean of "
    "{permutations} | KSG (same pairs) | `mst_mutual_information` (same "
    "pairs) | best constant |\n|---|---|---|---|---|---|"
)


def model_card(model, metrics):
    rows = []
    for d in TEST_DIMS:
        split = metrics.get(f"split_mae_d{d}")
        split = "(d = 1 not taken)" if split is None else f"{split:.4f}"
        averaged = metrics.get(f"estimator_mae_d{d}")
        averaged = "-" if averaged is None else f"{averaged:.4f}"
        rows.append(
            f"| {d} | {metrics[f'mae_d{d}']:.4f} | {averaged} | "
            f"{metrics[f'ksg_mae_d{d}']:.4f} | {split} | "
            f"{metrics[f'median_mae_d{d}']:.4f} |"
        )
    rows = "\n".join(rows)
    beats_ksg = [
        d for d in TEST_DIMS if metrics[f"mae_d{d}"] < metrics[f"ksg_mae_d{d}"]
    ]
    behind_split = [
        d
        for d in TEST_DIMS
        if f"split_mae_d{d}" in metrics
        and metrics[f"mae_d{d}"] >= metrics[f"split_mae_d{d}"]
    ]
    constant = [
        d
        for d in TEST_DIMS
        if metrics[f"mae_d{d}"] >= 0.9 * metrics[f"median_mae_d{d}"]
    ]
    verdict = (
        "It is below KSG at d = "
        + (", ".join(str(d) for d in beats_ksg) or "none of them")
        + " and "
        + (
            "below the split preset at every tested d it shares with it."
            if not behind_split
            else "NOT below the split preset at d = "
            + ", ".join(str(d) for d in behind_split)
            + "."
        )
    )
    if constant:
        verdict += (
            " At d = " + ", ".join(str(d) for d in constant) + " it is not "
            "even 10 % better than the best constant answer: its answers "
            "there should not be used."
        )
    training = mst_recipe.training_text(
        NAME,
        TASK,
        metrics["fit"],
        extra=mst_recipe.start_text(metrics),
        earlier=metrics.get("earlier_fits", ()),
    )
    return f"""# `{NAME}`

The mutual information `I(X; Y)` of paired samples read as a KL
divergence, `KL(P_XY || P_X P_Y)`, by a dimension-equivariant Multi-Set
Transformer (Selby et al., "Learning Functions on Multiple Sets using
Multi-Set Transformers", UAI 2022, Sec. 3.5) fine-tuned from the
`{INIT_FROM}` preset, for d = 1..8. Ours, not the paper's: the paper
shows the model the set of `x` and the set of `y`
(`{SPLIT_PRESET}`), which cannot use the pairing of the rows.

## Use

```python
import keras_msets
from keras_msets.estimators import pretrained

mi = pretrained.mutual_information(x, y)  # x, y [n, d]; d <= 8 uses this
mi = pretrained.mutual_information(x, y, mode="joint")  # this one always
model = keras_msets.zoo.load("{NAME}")  # the raw model
```

- Input of the estimator: numpy arrays `x` and `y`, `[n, d]` each, row j
  of both one joint sample, at least 2d + 1 rows (trained on 100-150).
  The estimator builds the joint samples `[x_j, y_j]` and the product
  samples `[x_j, y_pi(j)]` (`pretrained.joint_and_product_sets`, a fixed
  permutation), then whitens them jointly (`whiten_pairs`, each axis
  oriented by its third moment: both sets have the same mean), so the
  estimate is unchanged by an invertible affine map of `[x, y]` that
  keeps `x` and `y` apart.
- Trained on Gaussians with standard normal marginals and componentwise
  correlation (`corr(x_j, y_j) = rho`, all other pairs uncorrelated);
  other dependence structures are outside what it has seen.
- Input of the model: `{{"sets": [joint, product], "masks": [mask,
  mask]}}`, float32 `[batch, n, 2d]` and boolean `[batch, n]`.
- Output: `[batch, 1]`, the MI in nats (the estimator clips it at 0).
- Parameters: {model.count_params():,}; no weight depends on d.

{training}
## Results

Fresh test pairs never seen in training ({TEST_SIZE:,} per dimension,
`rho` uniform in [-0.999, 0.999], generator seed 2**32 + d: the same
joint samples as the `{SPLIT_PRESET}` card's at d = 2), mean absolute
error in nats. KSG is the estimator of Kraskov et al. (k = 3) on the
paired rows, `{SPLIT_PRESET}` the paper's way on the same samples, both
in the same run. "One permutation" is the model on the generator's
product samples, as in training; "`mutual_information`" is what the
estimator answers for the same joint samples: the mean of the model's
readings with {pretrained.JOINT_PERMUTATIONS} permutations (ours: each
permutation gives a noisy sample of the product of the marginals).
Re-measure with `keras-msets zoo evaluate {NAME}`.

{HEADER.format(permutations=pretrained.JOINT_PERMUTATIONS)}
{rows}

{verdict} The paper's model is "somewhat worse" than KSG at d = 2
(Fig. 2, a plot without numbers).

## Notes

- The permuted rows are only approximately independent samples of
  `P_X P_Y` (a permutation of the rows that were drawn); training uses
  the same construction, so the model learns the MI of what it sees.
- Loss: mean absolute error, the KL task's (MI is a KL divergence here);
  learning rate {LEARNING_RATE:g} by default, three times App. B's 1e-4
  (ours, for a short fine-tuning run).
"""


if __name__ == "__main__":
    mst_recipe.command_line(train, __doc__.splitlines()[0], DEFAULT_STEPS)
