"""`SetTask`: the shared part of the Multi-Set Transformer tasks.

Every task of Selby et al. (UAI 2022) trains on fresh synthetic pairs of
sets, one batch per step (`keras_msets.training.set_batches`), and is
measured on a fixed test set drawn with seeds from `TEST_SEED = 2**32`
up, never drawn in training. The pairs are padded sets with boolean
masks, `{"sets": (x, y), "masks": (x_mask, y_mask)}`, preprocessed as the
pretrained estimators do (`keras_msets.stats.preprocessing`).

Budget keys (besides `keras_msets.training.task`'s): `steps` (training
batches in all; epochs of `epoch_steps` batches), `dims` (the training
dimensions), `workers`, `checkpoint_dir` and `checkpoint_steps` (a
resumable run, `set_batches.fit_sets`), `bucket_multiple` (batches by
set-size bucket, `keras_msets.training.set_buckets`).
"""

import textwrap

import keras
import numpy as np

from keras_msets.data import mixtures
from keras_msets.stats import preprocessing
from keras_msets.training import set_batches
from keras_msets.training.task import Task
from keras_msets.utils.validation import check_positive_int

# Test sets: seeds at and above 2**32; training seeds are below it.
TEST_SEED = 2**32
# Pairs read as the estimators read them are padded to a multiple of this.
_PAD_MULTIPLE = 32


def print_metrics(metrics, verbose):
    if verbose:
        for key, value in metrics.items():
            print(f"{key}: {value:.4f}")


def predict_prepared(model, x, y, x_mask, y_mask):
    """The model's first output for prepared padded pairs, float64 `[n]`.

    One `predict_on_batch` call; the batch is filled up to the next power
    of two with copies of the first pair (fewer compilations).
    """
    batch = x.shape[0]
    size = 1 << max(batch - 1, 0).bit_length()
    if size > batch:
        fill = np.zeros(size - batch, dtype=np.int64)
        x, y, x_mask, y_mask = (
            np.concatenate([a, a[fill]]) for a in (x, y, x_mask, y_mask)
        )
    out = model.predict_on_batch({"sets": (x, y), "masks": (x_mask, y_mask)})
    return np.asarray(out, dtype=np.float64).reshape(size, -1)[:batch, 0]


def predict_sets(model, inputs, batch_size, clip=True):
    """The model's answers for prepared inputs, in batches, float64."""
    x, y = inputs["sets"]
    x_mask, y_mask = inputs["masks"]
    out = np.concatenate(
        [
            predict_prepared(
                model,
                x[i : i + batch_size],
                y[i : i + batch_size],
                x_mask[i : i + batch_size],
                y_mask[i : i + batch_size],
            )
            for i in range(0, len(x), batch_size)
        ]
    )
    return np.maximum(out, 0.0) if clip else out


def _pad(sets, multiple=_PAD_MULTIPLE):
    width = -(-max(len(s) for s in sets) // multiple) * multiple
    return mixtures.pad_sets(sets, width, np.float64)


def read_pairs(model, x_sets, y_sets, prepare, batch_size=64, symmetric=False):
    """The model's answers for lists of raw sets, as an estimator reads.

    Pairs of one dimension go through the model together, `batch_size` at
    a time, each set padded to a multiple of 32 points and prepared by
    `keras_msets.stats.preprocess(prepare, ...)`; with `symmetric`, the
    mean of the answers for `(x, y)` and `(y, x)`. Float64 `[n]`.
    """
    out = np.zeros(len(x_sets))
    dims = np.array([s.shape[1] for s in x_sets])
    for d in np.unique(dims):
        (chosen,) = np.nonzero(dims == d)
        for start in range(0, len(chosen), batch_size):
            part = chosen[start : start + batch_size]
            px, mx = _pad([x_sets[i] for i in part])
            py, my = _pad([y_sets[i] for i in part])
            wx, wy = preprocessing.preprocess(prepare, px, py, mx, my)
            out[part] = predict_prepared(model, wx, wy, mx, my)
            if symmetric:
                wy, wx = preprocessing.preprocess(prepare, py, px, my, mx)
                swapped = predict_prepared(model, wy, wx, my, mx)
                out[part] = 0.5 * (out[part] + swapped)
    return out


def total_steps(metrics):
    """Training batches of a preset's metrics, continued runs included."""
    fits = [*metrics.get("earlier_fits", ()), metrics["fit"]]
    return sum(f["steps"] for f in fits)


def listed(dims):
    return ", ".join(str(d) for d in dims)


def dims_text(dims):
    """`"d = 1..3"` for a contiguous range, `"d = 1, 4"` otherwise."""
    dims = tuple(dims)
    if len(dims) > 1 and dims == tuple(range(dims[0], dims[-1] + 1)):
        return f"d = {dims[0]}..{dims[-1]}"
    return "d = " + listed(dims)


class SetTask(Task):
    """A task on pairs of padded sets, trained on fresh batches.

    Subclasses set the class attributes below and implement `pairs` (or
    `make_batch` and `test_set`), `evaluate` and `card_sections`.

    Attributes:
        name: the preset metadata's `"task"`.
        estimator: the estimator a preset of this task serves, or None.
        preprocessing: what the estimators apply first (None: nothing).
        paired, symmetric, joint: estimator routing (`serves()`).
        loss, metrics: `model.compile`'s.
        dim_weight_power: sample weight `d**dim_weight_power` per pair.
        set_size: `(low, high)` points per set.
        paper_steps: the batches the paper trains (App. B).
        defaults: the budget defaults (App. B's batch size and rate).

    Args:
        dims: the training dimensions (None for tasks without one).
        test_dims: the dimensions the card measures.
        test_size: test pairs per dimension.
        default_dims: `(lo, hi)`, the dimensions the default estimator
            sends to this preset (None: only when named).
    """

    estimator = None
    preprocessing = None
    paired = False
    symmetric = False
    joint = False
    metrics = ()
    dim_weight_power = 0
    set_size = (100, 150)
    paper_steps = 100_000
    defaults = {"batch_size": 64, "learning_rate": 1e-4, "seed": 0}

    def __init__(
        self, dims=None, test_dims=None, test_size=1000, default_dims=None
    ):
        self.dims = self.check_dims(dims)
        self.test_dims = test_dims
        self.test_size = check_positive_int("test_size", test_size)
        self.default_dims = default_dims

    @property
    def batch_size(self):
        return self.defaults["batch_size"]

    @property
    def learning_rate(self):
        return self.defaults["learning_rate"]

    def check_dims(self, dims):
        """`dims` as a tuple of positive ints; None: the task's own."""
        if dims is None:
            return getattr(self, "dims", None)
        if isinstance(dims, int) and not isinstance(dims, bool):
            dims = (dims,)
        if (
            not isinstance(dims, (list, tuple, range))
            or len(dims) == 0
            or any(isinstance(d, bool) or not isinstance(d, int) for d in dims)
            or min(dims) < 1
        ):
            raise ValueError(
                "`dims` must be a positive integer or a non-empty sequence "
                f"of them (the dimensions to draw from). Received: "
                f"dims={dims!r}"
            )
        return tuple(int(d) for d in dims)

    # -- data -------------------------------------------------------------

    def pairs(self, num, dim, seed, set_size):
        """`(raw, targets)`: `num` raw pairs `(x, y, x_mask, y_mask)` in
        dimension `dim` from the task's generator, targets `[num, 1]`."""
        raise NotImplementedError

    def make_batch(self, batch_size, dim, seed, set_size=None):
        """One training batch `(inputs, targets)`, targets `[batch, 1]`."""
        raw, targets = self.pairs(
            batch_size, dim, seed, tuple(set_size or self.set_size)
        )
        return self.prepare(raw), targets

    def test_set(self, num, dim=None, seed=TEST_SEED):
        """`(raw, inputs, targets)` of the fixed test set in `dim` (None:
        the first training dimension), drawn with seed `seed + dim`."""
        dim = dim or self.dims[0]
        raw, targets = self.pairs(num, dim, seed + dim, tuple(self.set_size))
        return raw, self.prepare(raw), targets

    def prepare(self, raw):
        """Model inputs from the generator's `(x, y, x_mask, y_mask)`."""
        x, y = preprocessing.preprocess(self.preprocessing, *raw)
        return {"sets": (x, y), "masks": tuple(raw[2:])}

    def example_input(self):
        dim = None if self.dims is None else self.dims[0]
        _, inputs, _ = self.test_set(2, dim, seed=TEST_SEED + 1000)
        return {
            "sets": tuple(np.asarray(s, np.float32) for s in inputs["sets"]),
            "masks": tuple(np.asarray(m, bool) for m in inputs["masks"]),
        }

    def build(self, model, example=None):
        """Builds `model` before training or before loading weights.

        A dimension-equivariant model trained on several `d` is built with
        `d = None`, so its saved `build_config` records no particular `d`;
        other models are built on `example` (a model input) when given.
        """
        if (
            self.dims is not None
            and len(self.dims) > 1
            and getattr(model, "dimension_equivariant", False)
        ):
            model.build([(None, None, None)] * 2)
        elif example is not None:
            model(example)

    # -- training ---------------------------------------------------------

    def compile_arguments(self, budget):
        return {
            "optimizer": keras.optimizers.Adam(budget["learning_rate"]),
            "loss": self.loss,
            "metrics": list(self.metrics) or None,
        }

    def fit(self, model, budget, output_dir=None, verbose=2):
        """`set_batches.fit_sets` with the budget; the "fit" record."""
        return set_batches.fit_sets(
            model,
            self,
            budget.get("dims"),
            steps=budget["steps"],
            batch_size=budget["batch_size"],
            learning_rate=budget["learning_rate"],
            seed=budget["seed"],
            workers=budget.get("workers") or 1,
            verbose=verbose,
            checkpoint_dir=budget.get("checkpoint_dir"),
            checkpoint_steps=budget.get("checkpoint_steps"),
            bucket_multiple=budget.get("bucket_multiple"),
        )

    def route_text(self):
        """What the default estimator does with this preset, in words."""
        if self.default_dims is None:
            return "not by default"
        low, high = self.default_dims
        return f"d = {low}..{high} use this"

    def serves(self):
        if self.estimator is None:
            return None
        return {
            "estimator": self.estimator,
            "dims": [min(self.dims), max(self.dims)],
            "set_size": list(self.set_size),
            "preprocessing": self.preprocessing,
            "paired": self.paired,
            "symmetric": self.symmetric,
            "joint": self.joint,
            "default_dims": (
                None if self.default_dims is None else list(self.default_dims)
            ),
        }

    # -- model card -------------------------------------------------------

    def training_extra(self, metrics):
        """Sentences the card's training section adds (starting weights)."""
        start = metrics.get("pretrain_from")
        if start:
            return f" The first run starts from the weights of `{start}`."
        if "pretrain_from" in metrics:
            return " The first run starts from random weights."
        return ""

    def rerun_arguments(self, fit):
        """The recipe's command-line arguments that repeat `fit` (the
        learning rate always: a recipe may have its own default)."""
        arguments = f"--steps {fit['steps']}"
        if fit["batch_size"] != self.batch_size:
            arguments += f" --batch-size {fit['batch_size']}"
        return arguments + f" --learning-rate {fit['learning_rate']:g}"

    def training_text(self, recipe, metrics):
        """The "Training" section: every run and the commands that repeat
        them (`metrics["earlier_fits"]`: the runs this one continued)."""
        name, fit = recipe.name, metrics["fit"]
        earlier = metrics.get("earlier_fits", ())
        extra = self.training_extra(metrics)
        paper, paper_rate = self.paper_steps, self.learning_rate
        fits = [*earlier, fit]
        total = total_steps(metrics)
        # The backend the run was trained on, not the one re-rendering.
        backend = fit.get("backend", keras.backend.backend())
        if all(f["learning_rate"] == paper_rate for f in fits):
            rate_text = "(App. B)"
        elif earlier:
            rate_text = f"(App. B: {paper_rate:g}; each run's rate is below)"
        else:
            change = (
                "raised" if fit["learning_rate"] > paper_rate else ("lowered")
            )
            rate_text = (
                f"(App. B: {paper_rate:g}; {change} for a run of "
                f"{total / paper:.0%} of the paper's batches)"
            )
        dims = fit.get("dims")
        if not dims:
            dims_line = ""
        elif len(dims) == 1:
            dims_line = f" All pairs are in d = {dims[0]}."
        else:
            dims_line = (
                f" Each batch is in one dimension d, drawn from {dims[0]}.."
                f"{dims[-1]} in balanced random order (each d once in every "
                f"{len(dims)} batches)."
            )
        through = "Trained by `keras_msets.training.set_batches.fit_sets`"
        again = (
            f"(`keras-msets zoo train {name}` runs the recipe's defaults; "
            "`--steps N`\ntrains longer.)"
        )
        if not earlier:
            return f"""{through}: {fit["steps"]:,} batches of
{fit["batch_size"]} fresh pairs (the paper: {paper:,}), Adam at a constant
learning rate {fit["learning_rate"]:g} {rate_text}, loss
`{fit["loss_function"]}`, seed {fit["seed"]}.{dims_line}{extra}
Wall time {fit["seconds"]:.0f} s ({fit["steps_per_second"]:.3f} steps/s)
on {backend}. This run again:

    KERAS_BACKEND={backend} python zoo/{name}/recipe.py \
{self.rerun_arguments(fit)}

{again}"""
        runs = "\n".join(
            textwrap.fill(
                f"- run {k}: {f['steps']:,} batches of {f['batch_size']} "
                f"fresh pairs, learning rate {f['learning_rate']:g}, batch "
                f"seed {f['seed']}, {f['seconds']:.0f} s "
                f"({f['steps_per_second']:.3f} steps/s) on "
                f"{f.get('backend', backend)}",
                76,
                subsequent_indent="  ",
            )
            for k, f in enumerate(fits, 1)
        )
        commands = []
        for k, f in enumerate(fits, 1):
            command = (
                f"    KERAS_BACKEND={f.get('backend', backend)} python "
                f"zoo/{name}/recipe.py {self.rerun_arguments(f)}"
            )
            if k > 1:
                command += f" --continue-from run{k - 1}"
            commands.append(command + f" --output-dir run{k}")
        commands = "\n".join(commands)
        return f"""{through}, in {len(fits)} runs, each
continuing the weights of the one before (`--continue-from`; Adam starts
afresh in every run): {total:,} batches in all (the paper: {paper:,}),
Adam at a constant learning rate in each run {rate_text}, loss
`{fit["loss_function"]}`.{dims_line}{extra}

{runs}

These runs again (the last folder is the preset):

{commands}

{again}"""


# A preset "has learned" a dimension when its error there is below this
# fraction of the best constant answer's.
SKILL_MARGIN = 0.9


def unlearned_text(metrics, dims):
    """The card's warning for the `d` where `mae_d{d}` is not 10 % below
    the best constant answer (`median_mae_d{d}`), or ""."""
    constant = [
        d
        for d in dims
        if metrics[f"mae_d{d}"] >= SKILL_MARGIN * metrics[f"median_mae_d{d}"]
    ]
    if not constant:
        return ""
    return (
        f" At d = {listed(constant)} it is not even 10 % better than the "
        'best constant answer (column "best constant": always the median '
        "test label): it has not learned to read its input there, and its "
        "answers should not be used."
    )


def markdown_table(header, rows):
    """A markdown table: the `header` line, its rule, then `rows`."""
    return "\n".join([header, "|" + "---|" * header.count(" |"), *rows])


def verdict_text(metrics, dims, *comparisons):
    """The card's verdict under the table: "It is below ... ; it is ...",
    one `compared_text` per `(key, what)` of `comparisons`, then
    `unlearned_text`."""
    compared = "; it is ".join(
        compared_text(metrics, dims, key, what) for key, what in comparisons
    )
    return f"It is {compared}." + unlearned_text(metrics, dims)


def compared_text(metrics, dims, key, what):
    """ "below `what` at every tested d" or the `d` where it is not."""
    behind = [
        d
        for d in dims
        if f"{key}_mae_d{d}" in metrics
        and metrics[f"mae_d{d}"] >= metrics[f"{key}_mae_d{d}"]
    ]
    if not behind:
        return f"below {what} at every tested d it was measured beside"
    return f"NOT below {what} at d = {listed(behind)}"
