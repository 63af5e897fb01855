"""The optional KerasHub import (private)."""


def import_keras_hub(needed_by):
    """`keras_hub`, or an `ImportError` naming what needs it and the fix.

    Args:
        needed_by: what uses KerasHub, a sentence start such as "The 'pe'
            and 'tpe' embeddings use KerasHub's position layers".
    """
    try:
        import keras_hub
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError(
            f"{needed_by}, which could not be imported ({e}). Install "
            "KerasHub with `pip install keras-hub` (or `pip install "
            "keras-msets[hub]`)."
        ) from e
    return keras_hub
