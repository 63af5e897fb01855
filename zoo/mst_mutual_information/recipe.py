"""Recipe of the `mst_mutual_information` preset.

A dimension-equivariant Multi-Set Transformer (Selby et al., UAI 2022,
Sec. 3.5 and 5.1.2, Fig. 2) trained to estimate the mutual information
of Gaussians with standard normal marginals and componentwise correlation
`rho` from 100-150 paired samples, shown as two sets as in the paper (the
`"split"` mode of `keras_msets.data.mutual_information_sets`), one model
for every dimension d = 2..20. It is the model behind
`keras_msets.estimators.pretrained.mutual_information` for d = 9..20
(d = 1..8 go to `mst_mutual_information_joint`, which reads the pairing
of the rows). Train it with

    KERAS_BACKEND=tensorflow python zoo/mst_mutual_information/recipe.py

(1,000 steps at learning rate 1e-3 by default: about 70 minutes on one
CPU core; the paper trains 100,000 batches at 1e-4, pass a larger
`--steps` on a GPU), then
`keras-msets zoo train mst_mutual_information` re-runs it. It writes the
preset folder (default: next to this file).
"""

from keras_msets.zoo import mst_recipe

NAME = "mst_mutual_information"
TASK = "mutual_information"
DIMS = tuple(range(2, 21))
TEST_DIMS = (2, 10, 20)  # the dimensions of Fig. 2
# Measured: 4.2 s per batch at d = 11 (the mean of 2..20) on tensorflow,
# one CPU core: 1,000 steps ~ 70 min.
DEFAULT_STEPS = 1000
# Ten times App. B's 1e-4, for a run of 1 % of the paper's batches. The
# first preset (1e-4, the MI itself as the target, 300 batches) learned
# nothing; benchmarks/RESULTS.md (MI section) has the measurements.
LEARNING_RATE = 1e-3
TEST_SIZE = 1000
SEED = 0


def build_model(**overrides):
    """App. B: 16 channels and feedforward width 32 per input dimension."""
    return mst_recipe.build_model(TASK, name=NAME, **overrides)


def evaluate(model, verbose=1, num=TEST_SIZE, seed=mst_recipe.TEST_SEED):
    """MAE at d = 2, 10, 20 beside the KSG estimator on the same pairs."""
    return mst_recipe.evaluate_mutual_information(
        model, dims=TEST_DIMS, num=num, seed=seed, verbose=verbose
    )


def train(output_dir=None, steps=None, **options):
    """Trains, evaluates, saves; `options`: `mst_recipe.train_recipe`'s."""
    return mst_recipe.train_recipe(
        globals(),
        data=(
            "100-150 joint samples (x_i, y_i) of Gaussians in d = 2..20 "
            "with standard normal marginals and corr(x_j, y_j) = rho, rho "
            "uniform in [-0.999, 0.999] (Selby et al. Sec. 5.1.2), shown "
            "as the set of x_i and the set of y_i, each coordinate "
            "standardized per set; label -(d/2) log(1 - rho^2), the model's "
            "output is its decoder's times d and the squared error has "
            "sample weight d**-2 (the error per coordinate); fresh pairs "
            "every batch"
        ),
        dims=DIMS,
        output_dir=output_dir,
        steps=steps,
        **options,
    )


HEADER = (
    "| d | this model | KSG (same pairs) | best constant | beats KSG |\n"
    "|---|---|---|---|---|"
)


def model_card(model, metrics):
    rows = []
    for d in TEST_DIMS:
        ours, ksg = metrics[f"mae_d{d}"], metrics[f"ksg_mae_d{d}"]
        better = "yes" if ours < ksg else "no"
        rows.append(
            f"| {d} | {ours:.4f} | {ksg:.4f} | "
            f"{metrics[f'median_mae_d{d}']:.4f} | {better} |"
        )
    rows = "\n".join(rows)
    high = [d for d in TEST_DIMS if d >= 10]
    failed = [
        d for d in high if metrics[f"mae_d{d}"] >= metrics[f"ksg_mae_d{d}"]
    ]
    verdict = (
        "It beats KSG at every tested d >= 10."
        if not failed
        else "It does NOT beat KSG at d = "
        + ", ".join(str(d) for d in failed)
        + f" after {mst_recipe.total_steps(metrics):,} training batches "
        "(the paper "
        "trains 100,000); train longer (`--steps`) to close the gap."
    )
    constant = [
        str(d)
        for d in TEST_DIMS
        if metrics[f"mae_d{d}"] >= 0.9 * metrics[f"median_mae_d{d}"]
    ]
    if constant:
        verdict += (
            " At d = " + ", ".join(constant) + " it is not even 10 % better "
            'than the best constant answer (column "best constant": always '
            "the median test label): it has not learned to read its input "
            "there, and its answers should not be used."
        )
    training = mst_recipe.training_text(
        NAME, TASK, metrics["fit"], earlier=metrics.get("earlier_fits", ())
    )
    return f"""# `{NAME}`

A dimension-equivariant Multi-Set Transformer (Selby et al., "Learning
Functions on Multiple Sets using Multi-Set Transformers", UAI 2022,
Sec. 3.5 and 5.1.2) that estimates the mutual information `I(X; Y)` of
Gaussian data from samples, in any dimension d = 2..20 with one model.

## Use

```python
import keras_msets
from keras_msets.estimators import pretrained

# x, y [n, d]
mi = pretrained.mutual_information(x, y, model="{NAME}")
model = keras_msets.zoo.load("{NAME}")  # the raw model
```

`pretrained.mutual_information(x, y)` without `model` uses this preset
for d = 9..20 and `mst_mutual_information_joint` (ours: the joint
samples against permuted ones, which uses the pairing) for d = 1..8.

- Input of the estimator: numpy arrays `x` and `y`, `[n, d]` each, row j
  of both one joint sample, at least d + 1 rows (trained on 100-150). Each
  coordinate of each set is standardized first. As in the paper the model
  reads the two sets, not the pairing of their rows.
- Trained on Gaussians with standard normal marginals and componentwise
  correlation (`corr(x_j, y_j) = rho`, all other pairs uncorrelated);
  other dependence structures are outside what it has seen.
- Input of the model: `{{"sets": [x, y], "masks": [x_mask, y_mask]}}`,
  float32 `[batch, n, d]` and boolean `[batch, n]`.
- Output: `[batch, 1]`, the MI in nats (the estimator clips it at 0):
  the decoder's output times d (`scale_output_by_dim=True`, ours), since
  the MI of d independent coordinate pairs grows in proportion to d and
  after the max over coordinates (Sec. 3.5) the decoder cannot see d
  directly.
- Parameters: {model.count_params():,}; no weight depends on d.

{training}
## Results

Fresh test pairs never seen in training ({TEST_SIZE:,} per dimension,
`rho` uniform in [-0.999, 0.999], generator seed 2**32 + d), mean
absolute error in nats. KSG is the estimator of Kraskov et al. (k = 3),
run on the paired rows of the same samples in the same run. Re-measure
with `keras-msets zoo evaluate {NAME}`.

{HEADER}
{rows}

The paper shows its results only as a plot (Fig. 2: its model is worse
than KSG and MINE at d = 2 and "almost indistinguishable from the ground
truth" at d = 10 and 20); it gives no numbers to put beside these. Target
of the issue: below KSG for d >= 10. {verdict}

## Notes

- One model for all of d = 2..20 (the paper: one per dimension range).
- Loss: mean squared error (the authors' code; App. B is silent) of the
  MI per coordinate (sample weight d**-2), so that every d weighs the
  same.
- Learning rate 1e-3, ten times App. B's, for a short run. The first
  preset, trained at 1e-4 on the MI itself (not per coordinate) for 300
  batches, learned nothing. In 500 batches at 1e-3 both targets learn;
  the per-coordinate one is better at d = 20 (benchmarks/RESULTS.md, MI
  section, `benchmarks/mst_mi_ablation.py`).
- Per-set standardization is ours (the training data are already close
  to standard); it makes the estimate invariant under a shift and a
  positive scaling of any coordinate of `x` or `y`.
"""


if __name__ == "__main__":
    mst_recipe.command_line(train, __doc__.splitlines()[0], DEFAULT_STEPS)
