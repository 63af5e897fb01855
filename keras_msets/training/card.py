"""Model cards: one template (`card_template.md`) plus a preset's own text.

`render(recipe, model, metrics)` fills the template's fields:

- `name`, `summary` (one line) and `text` (the preset's own markdown) from
  the `Recipe`;
- `use` (how to call the model), `training` (data, loss, budget, the run)
  and `results` (the metrics) from the recipe's `Task`
  (`use_text`, `training_text`, `card_sections`);
- `parameters` from the model and `backend_line` from the "fit" record in
  `metrics` (the backend the preset was trained on, not the one rendering
  the card).

A card can be re-rendered at any time from a preset's stored metrics
(`metadata.json` "metrics"), without training.
"""

from importlib import resources

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


def render(recipe, model, metrics):
    """The model card (markdown) of `recipe` for `model` and `metrics`."""
    task = recipe.task
    backend = trained_backend(metrics)
    text = recipe.text.strip()
    return template().format(
        name=recipe.name,
        summary=recipe.summary.strip(),
        text=f"\n{text}\n" if text else "",
        use=task.use_text(recipe).strip(),
        parameters=f"{model.count_params():,}",
        backend_line=(
            f"trained on the {backend} backend"
            if backend
            else "the backend it was trained on is in metadata.json"
        ),
        training=task.training_text(recipe, metrics).strip(),
        results=task.card_sections(recipe, metrics).strip(),
    )
