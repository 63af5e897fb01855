"""Short human descriptions of presets, from their metadata and card.

`summary(name)` gives what `keras-msets zoo list` and `zoo info` print:
what the preset does (the first paragraph of its card without the
citations in parentheses), its headline metric (`headline_metric`), the
formats of its input and output (from the stored example), its training
budget, the extras it needs and the command that re-measures it. Nothing
here loads a model or a recipe.
"""

import re

from keras_msets.zoo import registry

# What re-measuring a preset of a task needs beyond a backend: the extras
# and the data to fetch first. A preset's metadata may say it itself
# (`"extras"`, a list of extra names).
TASK_NEEDS = {
    "mr_polarity": {
        "extras": ["data"],
        "data": "the MR sentences (`keras-msets data fetch mr`)",
    },
    "shared_class_count": {"extras": ["data"], "data": None},
}
# What a preset's output means, per task (its shape comes from the
# stored example).
TASK_OUTPUTS = {"mr_polarity": "class probabilities (1 = positive)"}
# Config class modules that need an optional package to load, and its
# extra.
MODULE_EXTRAS = {"keras_hub": "hub"}
# What a model with a `TextPreprocessor` (in its config) reads.
RAW_TEXT_INPUT = "a list of raw sentences (strings)"


def _without_parentheses(text):
    """`text` without its (possibly nested) parenthesized parts that
    follow a space (`KL(P || Q)` stays)."""
    previous = None
    while previous != text:
        previous = text
        text = re.sub(r"\s+\((?:[^()]|\([^()]*\))*\)", "", text)
    text = " ".join(text.split())
    return re.sub(r"\s+([,.;:])", r"\1", text)


def description(card):
    """What the preset does: the first paragraph of its card (after the
    title), on one line, without citations in parentheses."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", card)]
    for paragraph in paragraphs:
        if paragraph and not paragraph.startswith(("#", "```", "|", "-")):
            return _without_parentheses(paragraph)
    return ""


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.3g}"


def _by_dimension(metrics, prefix):
    found = {}
    for key, value in metrics.items():
        match = re.fullmatch(rf"{prefix}(\d+)", key)
        if match and _number(value) is not None:
            found[int(match.group(1))] = value
    return dict(sorted(found.items()))


def headline_metric(metadata):
    """The preset's headline metric as a short text, or None.

    `metadata["headline_metric"]` (a key of its metrics) if present;
    else the test accuracy, the accuracy, the mean absolute error, the
    digit-sum accuracy over lengths 5-95 (the worst length), or the
    estimators' mean absolute error per dimension `d`, whichever the
    metrics have first.
    """
    metrics = metadata.get("metrics") or {}
    key = metadata.get("headline_metric")
    if key in metrics and _number(metrics[key]) is not None:
        return f"{key.replace('_', ' ')} {_number(metrics[key])}"
    for key, label in (
        ("test_accuracy", "test accuracy"),
        ("accuracy", "accuracy"),
        ("mae", "mean absolute error"),
    ):
        if _number(metrics.get(key)) is not None:
            return f"{label} {_number(metrics[key])}"
    if _number(metrics.get("min_accuracy_5_95")) is not None:
        text = (
            f"accuracy at least {_number(metrics['min_accuracy_5_95'])} at "
            "every length 5-95"
        )
        if _number(metrics.get("accuracy_len_500")) is not None:
            text += f", {_number(metrics['accuracy_len_500'])} at length 500"
        return text
    for prefix in ("estimator_mae_d", "mae_d"):
        errors = _by_dimension(metrics, prefix)
        if errors:
            values = ", ".join(
                f"{_number(v)} (d = {d})" for d, v in errors.items()
            )
            return f"mean absolute error {values}"
    return None


def _array_format(shape, dtype):
    dims = ", ".join(["batch"] + [str(n) for n in shape[1:]])
    return f"{dtype} [{dims}]"


def _shape(value):
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0] if value else None
    return shape


def _format(value, dtype):
    """The format of a stored example input (nested like `input_dtype`)."""
    if isinstance(dtype, dict):
        return (
            "{"
            + ", ".join(
                f"{key!r}: {_format(value[key], dtype[key])}" for key in dtype
            )
            + "}"
        )
    if isinstance(dtype, list):
        parts = [_format(v, t) for v, t in zip(value, dtype, strict=True)]
        if len(set(parts)) == 1 and len(parts) > 1:
            return f"{len(parts)} x {parts[0]}"
        return "(" + ", ".join(parts) + ")"
    return _array_format(_shape(value), dtype)


def example_formats(metadata):
    """`(input format, output format)` from the stored example, or
    `(None, None)` without one."""
    example = metadata.get("example")
    if not isinstance(example, dict) or "input" not in example:
        return None, None
    try:
        inputs = _format(example["input"], example["input_dtype"])
    except (KeyError, TypeError, ValueError, IndexError):
        inputs = None
    output = example.get("output")
    outputs = None if output is None else _array_format(_shape(output), "")
    return inputs, None if outputs is None else outputs.strip()


def _minutes(seconds):
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def budget(metadata):
    """The training budget as a short text, or None."""
    metrics = metadata.get("metrics") or {}
    backend = metadata.get("backend")
    on = f" on {backend}" if backend else ""
    fit = metrics.get("fit")
    if isinstance(fit, dict) and "steps" in fit:
        text = f"{fit['steps']} steps"
        if "batch_size" in fit:
            text += f" (batches of {fit['batch_size']})"
        if _number(fit.get("seconds")) is not None:
            text += f", {_minutes(fit['seconds'])}{on}"
        earlier = metrics.get("earlier_fits")
        if earlier:
            text += f", after {len(earlier)} earlier fits"
        return text
    parts = []
    stages = metrics.get("stages")
    if isinstance(stages, list) and stages:
        epochs = sum(s.get("epochs_run", 0) for s in stages)
        plural = "s" if len(stages) > 1 else ""
        parts.append(f"{epochs} epochs in {len(stages)} stage{plural}")
    elif _number(metrics.get("epochs_run")) is not None:
        parts.append(f"{metrics['epochs_run']} epochs")
    elif _number((metadata.get("settings") or {}).get("epochs")) is not None:
        parts.append(f"up to {metadata['settings']['epochs']} epochs")
    if _number(metrics.get("train_seconds")) is not None:
        parts.append(f"{_minutes(metrics['train_seconds'])}{on}")
    return ", ".join(parts) or None


def _config_modules(config):
    if isinstance(config, dict):
        module = config.get("module")
        if isinstance(module, str):
            yield module
        for value in config.values():
            yield from _config_modules(value)
    elif isinstance(config, list):
        for value in config:
            yield from _config_modules(value)


def _config(name):
    """The preset's model config, or `{}` when it cannot be read."""
    try:
        folder = registry.preset_dir(name)
        return registry.preset_io.read_config(folder, name)
    except ValueError:
        return {}


def takes_raw_text(config):
    """Whether a model config holds a `TextPreprocessor`, so that the
    model's `predict` reads raw sentences."""
    return any(
        module.startswith("keras_msets.models.text.preprocessor")
        for module in _config_modules(config)
    )


def list_note(summary):
    """What `zoo list` adds to a preset's line beyond what it does: the
    input and output of a preset that reads raw sentences, else None."""
    if not summary.get("input", "").startswith(RAW_TEXT_INPUT):
        return None
    output = summary.get("output")
    return f"Takes {RAW_TEXT_INPUT}" + (
        f", returns {output.split(' (')[0]}." if output else "."
    )


def extras(name, metadata, config=None):
    """`(extras to load, extras and data to re-measure)` of a preset."""
    load = set()
    config = _config(name) if config is None else config
    for module in _config_modules(config):
        top = module.split(".")[0]
        if top in MODULE_EXTRAS:
            load.add(MODULE_EXTRAS[top])
    needs = TASK_NEEDS.get(metadata.get("task"), {})
    measure = set(load) | set(metadata.get("extras") or needs.get("extras", []))
    return sorted(load), sorted(measure), needs.get("data")


def _extras_text(names):
    if not names:
        return "nothing beyond keras-msets and a backend"
    return f"pip install keras-msets[{','.join(names)}]"


def _serves_text(serves):
    low, high = serves["dims"]
    text = f"`{serves['estimator']}`, d = {low}" + (
        "" if low == high else f"..{high}"
    )
    default = serves.get("default_dims")
    if default:
        first, last = default
        text += f" (used by default for d = {first}" + (
            "" if first == last else f"..{last}"
        )
        text += ")"
    low, high = serves["set_size"]
    return text + f", sets of {low}-{high} points"


def summary(name):
    """`{field: text}` of preset `name`, in the order `zoo info` prints.

    Raises the `ValueError` of `keras_msets.zoo.info` for an unknown name
    or an unreadable metadata file.
    """
    metadata = registry.info(name)
    # The commands name the folder when `name` is a preset folder's path.
    target = metadata["path"] if registry._is_path(name) else name
    name = metadata.get("name", name)
    inputs, outputs = example_formats(metadata)
    config = _config(metadata["path"])
    if takes_raw_text(config):
        inputs = RAW_TEXT_INPUT + (
            f", or the {inputs} token ids" if inputs else ""
        )
    if outputs and metadata.get("task") in TASK_OUTPUTS:
        outputs += f" {TASK_OUTPUTS[metadata['task']]}"
    load, measure, data = extras(metadata["path"], metadata, config)
    needs = _extras_text(measure)
    if data:
        needs += f"; {data}"
    fields = {
        "name": name,
        "what": description(metadata.get("card", "")),
        "task": metadata.get("task"),
        "input": inputs,
        "output": outputs,
        "metric": headline_metric(metadata),
        "serves": None,
        "trained": budget(metadata),
        "loading needs": _extras_text(load),
        "evaluating needs": needs,
        "re-measure with": f"keras-msets zoo evaluate {target}",
        "card": f"{metadata['path']}/{registry.CARD_FILE}",
        "metadata": f"keras-msets zoo info {target} --json",
    }
    if isinstance(metadata.get("serves"), dict):
        fields["serves"] = _serves_text(metadata["serves"])
    if metadata.get("date"):
        fields["trained"] = (fields["trained"] or "") + (
            f" ({metadata['date']})" if fields["trained"] else metadata["date"]
        )
    return {key: value for key, value in fields.items() if value}
