"""Train / dev / test index splits of the text presets (MR polarity).

`stratified_split` holds out a stratified share of the labels (the early
stopping split of `keras_msets.training.text_classification`);
`mr_fold_split` is the split of the MR presets: fold `fold` of a
stratified 10-fold split is the test set, never seen in training.
"""

import numpy as np

from keras_msets import data
from keras_msets.utils import validation


def stratified_split(labels, fraction, seed=0):
    """Splits indices into `(keep, held_out)`, stratified by class.

    From every class, `round(fraction * class size)` indices (at least one
    when the class has two or more) are held out at random
    (`np.random.default_rng(seed)`).

    Args:
        labels: 1-D integer labels.
        fraction: number in (0, 1), the share held out.
        seed: integer seed.

    Returns:
        Two sorted int64 index arrays.
    """
    fraction = validation.check_float(
        "fraction",
        fraction,
        low=0,
        high=1,
        low_inclusive=False,
        high_inclusive=False,
    )
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    held_out = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        count = int(round(fraction * len(members)))
        if len(members) >= 2:
            count = min(max(count, 1), len(members) - 1)
        else:
            count = 0
        held_out.append(rng.permutation(members)[:count])
    held_out = np.sort(np.concatenate(held_out)).astype(np.int64)
    keep = np.setdiff1d(np.arange(len(labels)), held_out).astype(np.int64)
    return keep, held_out


def mr_fold_split(fold=0, n_folds=10, seed=0, mr_path=None):
    """`(texts, labels, train, test)` of MR with fold `fold` as test set.

    `texts` is the list of the 4,000 MR sentences, `labels` their int
    labels, `train` and `test` index arrays (the folds of
    `keras_msets.data.stratified_folds(labels, n_folds, seed)`).
    """
    texts, labels = data.load_mr(mr_path)
    folds = data.stratified_folds(labels, n_folds=n_folds, seed=seed)
    train, test = folds[fold]
    return list(texts), np.asarray(labels), train, test
