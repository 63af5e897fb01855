"""Which preset serves which estimator and dimension.

Each estimator preset's `metadata.json` has a `serves` record (the
estimator, the dimensions and set sizes it was trained on, its
preprocessing and the range of `d` it serves by default); this module
reads them into `EstimatorSpec`s (`preset_spec`, `installed_specs`) and
routes each `d` to a preset (`route_spans`).
"""

import collections.abc
import dataclasses
import functools
import os

from keras_msets import zoo
from keras_msets.training import preset_io


@dataclasses.dataclass(frozen=True)
class EstimatorSpec:
    """What a pretrained estimator expects: a preset's `serves` record.

    Attributes:
        preset: the zoo preset (a name, or a preset folder's path).
        dims: `(low, high)`, the dimensions `d` the preset was trained on
            (both ends included); other `d` are refused.
        set_size: `(low, high)`, the set sizes it was trained on; sets
            outside give a warning, not an error.
        preprocessing: `"whiten"` (`whiten_pairs`), `"whiten_third_moment"`
            (`whiten_pairs(..., sign="third_moment")`) or `"standardize"`
            (`standardize_pairs`).
        paired: whether row `i` of `x` and row `i` of `y` are one joint
            sample (then both sets must have the same number of rows).
        symmetric: whether the quantity does not depend on the order of
            the two sets; the estimate is then the mean of the model's
            answers for `(x, y)` and for `(y, x)`.
        joint: paired estimators only: whether the model reads the joint
            samples `[x_j, y_j]` against samples of the product of the
            marginals `[x_j, y_pi(j)]` (`joint_and_product_sets`) instead
            of the two sets `x` and `y`.
        estimator: the estimator it serves (`kl_divergence`,
            `mutual_information` or `same_distribution_probability`).
        default_dims: `(low, high)`, the `d` for which the estimator uses
            this preset when no model is named, or None.
    """

    preset: str
    dims: tuple
    set_size: tuple
    preprocessing: str
    paired: bool
    symmetric: bool = False
    joint: bool = False
    estimator: str = None
    default_dims: tuple = None

    @classmethod
    def from_serves(cls, preset, serves):
        """The spec of `preset` from its metadata's `serves` record."""
        serves = preset_io.check_serves(serves, name=preset)
        default = serves["default_dims"]
        return cls(
            preset=preset,
            dims=tuple(serves["dims"]),
            set_size=tuple(serves["set_size"]),
            preprocessing=serves["preprocessing"],
            paired=serves["paired"],
            symmetric=serves["symmetric"],
            joint=serves["joint"],
            estimator=serves["estimator"],
            default_dims=None if default is None else tuple(default),
        )


def preset_spec(name):
    """The `EstimatorSpec` of preset `name` (a name or a folder path), from
    the `serves` record of its metadata."""
    metadata = zoo.info(name)
    serves = metadata.get("serves")
    if serves is None:
        raise ValueError(
            f"Preset {name!r} is not an estimator preset: its metadata "
            "has no `serves` record (it was trained for the task "
            f"{metadata.get('task', 'unknown')!r}). Received: model={name!r}"
        )
    return EstimatorSpec.from_serves(name, serves)


def _metadata_stamp(root, name):
    """`(mtime_ns, size)` of a preset's metadata.json (None if missing)."""
    try:
        stat = os.stat(os.path.join(root, name, preset_io.METADATA_FILE))
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def installed_specs():
    """`{preset: EstimatorSpec}` of every installed estimator preset.

    Every preset of `keras_msets.zoo.list()` whose metadata has a
    `serves` record; presets whose metadata cannot be read are skipped
    here (loading one by name says what is wrong). The metadata files are
    parsed again only when one of them changes (time stamp and size) or
    the presets folder does: each estimator call routes through here.
    """
    root = str(zoo.presets_root())
    stamps = tuple((name, _metadata_stamp(root, name)) for name in zoo.list())
    return dict(_read_specs(root, stamps))


@functools.lru_cache(maxsize=8)
def _read_specs(root, stamps):
    del root  # part of the cache key only
    specs = {}
    for name, _ in stamps:
        try:
            metadata = zoo.info(name)
        except ValueError:
            continue
        if metadata.get("serves") is not None:
            specs[name] = EstimatorSpec.from_serves(name, metadata["serves"])
    return specs


def route_spans(estimator, joint=None):
    """`(preset, first d, last d)` of the presets `estimator` uses by default.

    From the `serves.default_dims` of the installed presets of
    `estimator` (and, if `joint` is not None, of that reading), sorted
    by `d`. Raises a `ValueError` when none serves it or two claim the
    same `d`.
    """
    spans = sorted(
        (*spec.default_dims, name)
        for name, spec in installed_specs().items()
        if spec.estimator == estimator
        and spec.default_dims is not None
        and (joint is None or spec.joint == joint)
    )
    if not spans:
        raise ValueError(
            f"No installed preset serves `{estimator}` by default: none "
            "has `serves.estimator` equal to it with `default_dims` in its "
            f"metadata.json (presets folder: {zoo.presets_root()}). Name a "
            "preset or pass a keras.Model as `model`."
        )
    for (_, high, name), (next_low, _, next_name) in zip(
        spans, spans[1:], strict=False
    ):
        if next_low <= high:
            raise ValueError(
                f"Presets {name!r} and {next_name!r} both claim d = "
                f"{next_low} for `{estimator}` (`serves.default_dims` in "
                "their metadata.json); give each d to one preset."
            )
    return [(name, low, high) for low, high, name in spans]


def _spans_text(spans):
    return ", ".join(
        f"d = {first}"
        + ("" if last == first else f"..{last}")
        + f" through `{name}`"
        for name, first, last in spans
    )


def _model_spec(estimator, joint):
    """The spec for a `keras.Model` given as `model`: that of the default
    preset of `estimator` (and reading) for the highest `d`."""
    name = route_spans(estimator, joint=joint)[-1][0]
    return preset_spec(name)


class _LegacySpecs(collections.abc.Mapping):
    """`SPECS`: the specs of the shipped estimator presets, read from their
    metadata, under the keys code written before the presets said what
    they serve uses (and under the preset names)."""

    _KEYS = {
        "kl_divergence": "mst_kl_divergence",
        "kl_divergence_low_d": "mst_kl_divergence_low_d",
        "mutual_information": "mst_mutual_information",
        "mutual_information_joint": "mst_mutual_information_joint",
        "same_distribution_probability": "mst_two_sample",
    }

    def __getitem__(self, key):
        return preset_spec(self._KEYS.get(key, key))

    def __iter__(self):
        return iter(self._KEYS)

    def __len__(self):
        return len(self._KEYS)


SPECS = _LegacySpecs()


def _named_spec(estimator, model, joint=None):
    """The spec of preset `model`, refused unless it serves `estimator`
    (and the `joint` reading, when not None)."""
    spec = preset_spec(model)
    if spec.estimator != estimator:
        raise ValueError(
            f"`model` must be a preset of the `{estimator}` estimator; "
            f"preset {model!r} serves `{spec.estimator}` (its "
            f"metadata.json). Received: model={model!r}"
        )
    if joint is not None and spec.joint != joint:
        mode = "joint" if spec.joint else "split"
        raise ValueError(
            f"Preset {model!r} reads the {mode} samples, not the "
            f"{'joint' if joint else 'split'} ones; leave `mode` None or "
            f"pass mode={mode!r}. Received: model={model!r}"
        )
    return spec


def _spec_for(estimator, model, joint=None):
    """The spec for `model` (a preset name or path, or a keras.Model)."""
    if isinstance(model, (str, os.PathLike)):
        return _named_spec(estimator, model, joint)
    return _model_spec(estimator, bool(joint))
