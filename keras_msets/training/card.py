"""Model cards: one template (`card_template.md`) plus a preset's own text.

`render(recipe, model, metrics)` fills the template's fields:

- `name`, `summary` (one line) and `text` (the preset's own markdown) from
  the `Recipe`;
- `use` (how to call the model), `training` (data, loss, budget, the run)
  and `results` (the metrics) from the recipe's `Task`
  (`use_text`, `training_text`, `card_sections`);
- `parameters` from the model and `backend_line` from the "fit" record in
  `metrics` (the backend the preset was trained on, not the one rendering
  the card), else from the metadata.json beside the recipe file.

A card can be re-rendered at any time from a preset's stored metrics
(`metadata.json` "metrics"), without training.
"""

import json
import textwrap
from importlib import resources
from pathlib import Path

TEMPLATE_FILE = "card_template.md"


def template():
    """The card template's text (shipped with the package)."""
    return (
        resources.files("keras_msets.training")
        .joinpath(TEMPLATE_FILE)
        .read_text(encoding="utf-8")
    )


def trained_backend(metrics):
    """The backend named by the "fit" record of `metrics`, or `None`."""
    fit = metrics.get("fit")
    return fit.get("backend") if isinstance(fit, dict) else None


def stored_backend(recipe):
    """The backend in the metadata.json beside the recipe file, if any.

    For presets whose stored metrics predate the "fit" record.
    """
    if recipe.source is None:
        return None
    metadata = Path(recipe.source).parent / "metadata.json"
    if not metadata.is_file():
        return None
    with open(metadata) as f:
        return json.load(f).get("backend")


def wrap(markdown, width=76):
    """Fill the prose paragraphs of `markdown` to `width` columns.

    Paragraphs that are lists, tables, headings, indented or fenced code
    are left as they are.
    """
    paragraphs = []
    for paragraph in markdown.strip().split("\n\n"):
        if paragraph.lstrip().startswith(("-", "|", "#", "```", "*")) or (
            paragraph.startswith(" ")
        ):
            paragraphs.append(paragraph)
        else:
            paragraphs.append(
                textwrap.fill(
                    " ".join(paragraph.split()),
                    width=width,
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
    return "\n\n".join(paragraphs)


def render(recipe, model, metrics):
    """The model card (markdown) of `recipe` for `model` and `metrics`."""
    task = recipe.task
    backend = trained_backend(metrics) or stored_backend(recipe)
    text = wrap(recipe.text)
    return template().format(
        name=recipe.name,
        summary=wrap(recipe.summary),
        text=f"\n{text}\n" if text else "",
        use=task.use_text(recipe).strip(),
        parameters=f"{model.count_params():,}",
        backend_line=(
            f"trained on the {backend} backend"
            if backend
            else "the backend it was trained on is in metadata.json"
        ),
        training=wrap(task.training_text(recipe, metrics)),
        results=task.card_sections(recipe, metrics).strip(),
    )
