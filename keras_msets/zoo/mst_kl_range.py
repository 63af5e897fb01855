"""The shared recipe of the KL presets fine-tuned on one range of d.

The paper trains one KL model per range of dimensions (Selby et al., UAI
2022, App. B: d = 1..3 for its d = 2 row of Table 1, 3..5 for d = 4, ...).
The library's general `mst_kl_divergence` covers d = 2..16 with one model;
a range preset (`mst_kl_divergence_low_d`; `mst_kl_divergence_mid_d`
has its recipe, not yet its weights) is that model, its weights copied
and then fine-tuned on its range only.

A range recipe module defines `NAME`, `TASK`, `DIMS` (the training
range), `TEST_DIMS`, `GAUSSIAN_DIMS`, `GAUSSIAN_KLS`, `INIT_FROM`,
`DEFAULT_STEPS`, `TEST_SIZE`, `SEED`, `RANGE_TEXT` (the card's words for
the range) and `NOTES` (the card's last bullet points), and calls the
functions here with its `globals()`.
"""

import textwrap

from keras_msets.zoo import mst_recipe


def dims_text(dims):
    """`"d = 1..3"` for a contiguous range, `"d = 1, 4"` otherwise."""
    dims = tuple(dims)
    if len(dims) > 1 and dims == tuple(range(dims[0], dims[-1] + 1)):
        return f"d = {dims[0]}..{dims[-1]}"
    return "d = " + ", ".join(str(d) for d in dims)


def build_model(recipe, **overrides):
    """The `INIT_FROM` model: App. B's 16 channels and feedforward width 32
    per input dimension, dimension-equivariant."""
    return mst_recipe.build_model(
        recipe["TASK"], name=recipe["NAME"], **overrides
    )


def evaluate(recipe, model, verbose=1, num=None, seed=mst_recipe.TEST_SEED):
    """MAE at `TEST_DIMS` beside k-NN and the general preset on the same
    pairs; then shifted unit Gaussians at `GAUSSIAN_DIMS` (off the
    training distribution).

    The general preset (`INIT_FROM`) is scored when the zoo has it (keys
    `general_mae_d{d}`); the test pairs are those of its card.
    """
    from keras_msets import zoo

    num = num or recipe["TEST_SIZE"]
    dims = recipe["TEST_DIMS"]
    metrics = mst_recipe.evaluate_kl_divergence(
        model, dims=dims, num=num, seed=seed, verbose=verbose
    )
    if recipe["INIT_FROM"] in zoo.list():
        general = mst_recipe.evaluate_kl_divergence(
            zoo.load(recipe["INIT_FROM"]), dims=dims, num=num, seed=seed
        )
        metrics.update(
            {f"general_mae_d{d}": general[f"mae_d{d}"] for d in dims}
        )
    metrics.update(
        mst_recipe.evaluate_kl_gaussians(
            model,
            dims=recipe["GAUSSIAN_DIMS"],
            kls=recipe["GAUSSIAN_KLS"],
            verbose=verbose,
        )
    )
    return metrics


def train(recipe, output_dir=None, steps=None, init_from=None, **options):
    """Trains, evaluates, saves; `options`: `mst_recipe.train_recipe`'s.

    `init_from`: `"default"` (the recipe's `INIT_FROM`, whose weights the
    first run starts from), or None (random initial weights; tests with
    tiny models). A run that continues another (`continue_from`) starts
    from that one's weights.
    """
    start = recipe["INIT_FROM"]
    if init_from is not None:
        if init_from != start:
            raise ValueError(
                f"`init_from` must be None or {start!r}. Received: "
                f"init_from={init_from!r}"
            )
        options.setdefault("before_fit", mst_recipe.start_from_preset(start))
    return mst_recipe.train_recipe(
        recipe,
        data=(
            "pairs of sets of 100-150 samples of two random Gaussian "
            "mixtures (Selby et al. Sec. 5.1.1) in "
            f"{dims_text(recipe['DIMS'])}, whitened jointly (eq. 15, then "
            "a canonical rotation), labelled with a Monte-Carlo estimate "
            "of KL(P || Q) over the points of X; fresh pairs every batch; "
            f"initial weights: the {start} preset"
        ),
        dims=recipe["DIMS"],
        output_dir=output_dir,
        steps=steps,
        **options,
    )


def _fill(text, width=72, **kwargs):
    return textwrap.fill(text, width, break_on_hyphens=False, **kwargs)


def route_text(name):
    """Which `d` the default `kl_divergence` sends to preset `name`, as
    the card's comment says it (from `pretrained.DEFAULT_ROUTES`)."""
    from keras_msets.estimators import pretrained

    for key, first, last in pretrained.route_spans("kl_divergence"):
        if pretrained.SPECS[key].preset == name:
            return f"d = {first}..{last} use this"
    return "not by default"


def _paper(d):
    paper = mst_recipe.PAPER_KL_MAE.get(d)
    return "-" if paper is None else f"{paper:.4f}"


def _listed(dims):
    return ", ".join(str(d) for d in dims)


def _verdict(recipe, metrics):
    dims = recipe["TEST_DIMS"]
    behind_knn = [
        d for d in dims if metrics[f"mae_d{d}"] >= metrics[f"knn_mae_d{d}"]
    ]
    behind_general = [
        d
        for d in dims
        if f"general_mae_d{d}" in metrics
        and metrics[f"mae_d{d}"] >= metrics[f"general_mae_d{d}"]
    ]
    verdict = (
        "It is below k-NN at every tested d"
        if not behind_knn
        else f"It is NOT below k-NN at d = {_listed(behind_knn)}"
    ) + (
        " and below the general preset at every tested d."
        if not behind_general
        else "; it is NOT below the general preset at d = "
        f"{_listed(behind_general)}."
    )
    constant = [
        d
        for d in dims
        if metrics[f"mae_d{d}"] >= 0.9 * metrics[f"median_mae_d{d}"]
    ]
    if constant:
        verdict += (
            f" At d = {_listed(constant)} it is not even 10 % better than "
            "the best constant answer: its answers there should not be "
            "used."
        )
    reported = [d for d in dims if d in mst_recipe.PAPER_KL_MAE]
    paper = "; ".join(
        (f"at d = {d}: " if len(reported) > 1 else "")
        + f"{mst_recipe.PAPER_KL_MAE[d]} for its "
        "dimension-equivariant model, "
        f"{mst_recipe.PAPER_KNN_KL_MAE[d]} for k-NN"
        for d in reported
    )
    if paper:
        verdict += f" The paper reports d = {_listed(reported)} only ({paper})."
    return verdict


def model_card(recipe, model, metrics):
    """The README of a range preset."""
    name, start = recipe["NAME"], recipe["INIT_FROM"]
    dims = recipe["TEST_DIMS"]
    span = dims_text(recipe["DIMS"])
    rows = []
    for d in dims:
        general = metrics.get(f"general_mae_d{d}")
        general = "-" if general is None else f"{general:.4f}"
        rows.append(
            f"| {d} | {metrics[f'mae_d{d}']:.4f} | {general} | "
            f"{metrics[f'knn_mae_d{d}']:.4f} | {_paper(d)} | "
            f"{metrics[f'median_mae_d{d}']:.4f} | "
            f"{metrics[f'mean_label_d{d}']:.3f} |"
        )
    rows = "\n".join(rows)
    header = (
        f"| d | this model | `{start}` (same pairs) | k-NN (same "
        "pairs) | paper, Equi (Table 1) | best constant | mean true KL |\n"
        "|---|---|---|---|---|---|---|"
    )
    gaussian = mst_recipe.kl_gaussians_table(
        metrics, recipe["GAUSSIAN_DIMS"], recipe["GAUSSIAN_KLS"]
    )
    training = mst_recipe.training_text(
        name,
        recipe["TASK"],
        metrics["fit"],
        extra=mst_recipe.start_text(metrics),
        earlier=metrics.get("earlier_fits", ()),
    )
    notes = "\n".join(
        _fill(note, 72, initial_indent="- ", subsequent_indent="  ")
        for note in recipe["NOTES"]
    )
    shared = [d for d in dims if d in mst_recipe.PAPER_KL_MAE]
    shared = (
        f"at d = {_listed(shared)} the pairs of the `{start}` card"
        if shared
        else f"pairs the `{start}` card does not have"
    )
    measured = _fill(
        f"Fresh test pairs never seen in training ({recipe['TEST_SIZE']:,} "
        f"per dimension, generator seed 2**32 + d: {shared}), mean "
        f"absolute error in nats. `{start}` and the k-NN estimator of "
        "Wang, Kulkarni & Verdú (k = 1, the paper's baseline) are "
        "measured on the same whitened sets in the same run.",
        72,
    )
    measured += f"\nRe-measure with `keras-msets zoo evaluate {name}`."
    return f"""# `{name}`

The KL divergence `KL(P || Q)` from a set of samples of `P` and one of
`Q`, in {span}: the `{start}` model (a dimension-equivariant
Multi-Set Transformer, Selby et al., "Learning Functions on Multiple Sets
using Multi-Set Transformers", UAI 2022, Sec. 3.5 and 5.1.1) fine-tuned
on {span} only, {recipe["RANGE_TEXT"]} (App. B
trains one model per dimension range).

## Use

```python
import keras_msets
from keras_msets.estimators import pretrained

kl = pretrained.kl_divergence(x, y)  # x [n, d], y [m, d]; {route_text(name)}
kl = pretrained.kl_divergence(x, y, model="{name}")
model = keras_msets.zoo.load("{name}")  # the raw model
```

- Input of the estimator: numpy arrays, `x` `[n, d]` (samples of P) and
  `y` `[m, d]` (samples of Q), {span}, at least d + 1 points each,
  trained on 100-150; or batches of them. Whitened as for
  `{start}` (eq. 15, then a rotation to canonical axes).
- Input of the model: `{{"sets": [x, y], "masks": [x_mask, y_mask]}}`,
  whitened float32 sets `[batch, n, d]` and boolean masks `[batch, n]`.
- Output: `[batch, 1]`, KL in nats (the estimator clips it at 0).
- Parameters: {model.count_params():,}; no weight depends on d, so the
  model runs at any d, but it was trained on {span} last.

{training}
## Results

{measured}

{header}
{rows}

{_fill(_verdict(recipe, metrics), 72)}

## Off the training distribution: shifted unit Gaussians

`P = N(0, I)` against `Q = N(mu, I)`, `KL = |mu|^2 / 2` exactly, 20
pairs of 100-150 points per KL value (`mst_recipe.evaluate_kl_gaussians`):

{gaussian}

## Notes

- Loss: mean absolute error and learning rate 1e-4, as for
  `{start}` (App. B).
{notes}
"""
