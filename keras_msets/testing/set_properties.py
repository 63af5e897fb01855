"""Set properties: permutation invariance / equivariance, padding invariance.

Each assertion calls a function on sets `[batch, set_size, ...]` (one set,
or a list of sets for multi-set inputs, with optional boolean masks
`[batch, set_size]`), changes what must not matter (the order of each
set's elements, the padded elements) and compares the outputs.
"""

import keras
import numpy as np

from keras_msets.testing.comparisons import assert_all_close
from keras_msets.testing.comparisons import to_numpy
from keras_msets.testing.comparisons import to_numpy_structure


def _as_sets(inputs, masks):
    """Returns (list of numpy sets, list of numpy masks or None, is_multi)."""
    multi = isinstance(inputs, (list, tuple))
    sets = [to_numpy(x) for x in (inputs if multi else [inputs])]
    if masks is None:
        mask_list = None
    else:
        mask_list = list(masks) if multi else [masks]
        if len(mask_list) != len(sets):
            raise ValueError(
                "`masks` must mirror `inputs`: one mask per set. Received "
                f"{len(sets)} sets and {len(mask_list)} masks."
            )
        mask_list = [to_numpy(m).astype(bool) for m in mask_list]
        for i, (x, m) in enumerate(zip(sets, mask_list, strict=True)):
            if m.shape != x.shape[:2]:
                raise ValueError(
                    f"Mask {i} must have shape [batch, set_size] = "
                    f"{x.shape[:2]}. Received shape {m.shape}."
                )
    for i, x in enumerate(sets):
        if x.ndim < 2:
            raise ValueError(
                f"Set {i} must have shape [batch, set_size, ...]. "
                f"Received shape {x.shape}."
            )
    return sets, mask_list, multi


def _call_set_fn(fn, sets, masks, multi):
    """Calls `fn(inputs)` or `fn(inputs, masks)` with backend tensors."""
    inputs = [keras.ops.convert_to_tensor(x) for x in sets]
    inputs = inputs if multi else inputs[0]
    if masks is None:
        out = fn(inputs)
    else:
        mask_tensors = [keras.ops.convert_to_tensor(m) for m in masks]
        out = fn(inputs, mask_tensors if multi else mask_tensors[0])
    return to_numpy_structure(out)


def _permute(x, perm):
    """Permutes axis 1 of `x [batch, n, ...]` by `perm [batch, n]` per row."""
    index = perm.reshape(perm.shape + (1,) * (x.ndim - 2))
    return np.take_along_axis(x, index, axis=1)


def _random_perms(rng, sets):
    return [
        np.stack([rng.permutation(x.shape[1]) for _ in range(x.shape[0])])
        for x in sets
    ]


def _permuted_calls(fn, sets, mask_list, multi, num_draws, seed):
    """Yields `(draw, perms, output)` for `num_draws` random permutations
    of every set (per batch row), each mask permuted with its set."""
    rng = np.random.default_rng(seed)
    for draw in range(num_draws):
        perms = _random_perms(rng, sets)
        permuted = [_permute(x, p) for x, p in zip(sets, perms, strict=True)]
        permuted_masks = (
            None
            if mask_list is None
            else [_permute(m, p) for m, p in zip(mask_list, perms, strict=True)]
        )
        yield draw, perms, _call_set_fn(fn, permuted, permuted_masks, multi)


def _describe(multi, draw):
    where = "per set, independently" if multi else "of the set axis"
    return f"under random permutation draw {draw} ({where})"


def assert_permutation_invariant(
    fn, inputs, masks=None, num_draws=3, atol=1e-5, seed=0
):
    """Asserts `fn`'s output does not change when set elements are reordered.

    Args:
        fn: callable, called as `fn(inputs)` when `masks` is None and as
            `fn(inputs, masks)` otherwise, with backend tensors.
        inputs: one set `[batch, n, ...]`, or a list of sets (multi-set
            input); each set is permuted independently, per batch row.
        masks: None, or boolean masks `[batch, n]` mirroring `inputs` (a
            tensor for one set, a list for a list of sets); each mask is
            permuted with its set.
        num_draws: number of random permutations tried.
        atol: absolute tolerance.
        seed: seed of the numpy generator drawing the permutations.
    """
    sets, mask_list, multi = _as_sets(inputs, masks)
    reference = _call_set_fn(fn, sets, mask_list, multi)
    for draw, _, out in _permuted_calls(
        fn, sets, mask_list, multi, num_draws, seed
    ):
        assert_all_close(
            out,
            reference,
            atol=atol,
            rtol=atol,
            msg=f"Output is not permutation invariant {_describe(multi, draw)}",
        )


def assert_permutation_equivariant(
    fn, inputs, masks=None, num_draws=3, atol=1e-5, seed=0
):
    """Asserts that reordering set k's elements reorders output k the same way.

    `fn`'s output for a single set is a tensor `[batch, n, ...]`; for a list
    of sets it is a list aligned with the inputs. Arguments are as in
    `assert_permutation_invariant`.
    """
    sets, mask_list, multi = _as_sets(inputs, masks)
    reference = _call_set_fn(fn, sets, mask_list, multi)
    reference_list = list(reference) if multi else [reference]
    if len(reference_list) != len(sets):
        raise AssertionError(
            f"An equivariant function must return one output per set: got "
            f"{len(reference_list)} outputs for {len(sets)} sets."
        )
    for draw, perms, out in _permuted_calls(
        fn, sets, mask_list, multi, num_draws, seed
    ):
        out_list = list(out) if multi else [out]
        for k, (o, r, p) in enumerate(
            zip(out_list, reference_list, perms, strict=True)
        ):
            if o.shape[:2] != p.shape:
                raise AssertionError(
                    f"Output {k} has shape {o.shape}; an equivariant output "
                    f"must start with [batch, set_size] = {p.shape}."
                )
            expected = _permute(r, p)
            if mask_list is not None:
                # Padded positions may hold anything; compare valid ones.
                valid = _permute(mask_list[k], p)
                o, expected = o[valid], expected[valid]
            assert_all_close(
                o,
                expected,
                atol=atol,
                rtol=atol,
                msg=(
                    f"Output {k} is not permutation equivariant "
                    f"{_describe(multi, draw)}"
                ),
            )


def _garbage(rng, x, shape):
    """Large random values of `x`'s dtype, for padded positions."""
    if x.dtype == bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.issubdtype(x.dtype, np.integer):
        low, high = (int(x.min()), int(x.max())) if x.size else (0, 1)
        return rng.integers(low, high + 1, size=shape).astype(x.dtype)
    sign = rng.choice([-1.0, 1.0], size=shape)
    return (sign * rng.uniform(1e2, 1e3, size=shape)).astype(x.dtype)


def assert_padding_invariant(
    fn, inputs, masks=None, extra=3, equivariant=False, atol=1e-5, seed=0
):
    """Asserts that padded (masked-out) elements never change the result.

    Each set gets `extra` more elements filled with large random garbage
    (about ±1e3) and mask False; positions that were already padded are
    overwritten with garbage too. `fn` is always called as
    `fn(inputs, masks)` (all-True masks when `masks` is None).

    Args:
        fn: callable `fn(inputs, masks)`, see `assert_permutation_invariant`.
        inputs: one set `[batch, n, ...]` or a list of sets.
        masks: None or boolean masks `[batch, n]` mirroring `inputs`.
        extra: number of padded elements appended to each set.
        equivariant: if False the whole output must be unchanged; if True
            output k must be unchanged on set k's valid positions (the first
            n positions where the mask is True).
        atol: absolute tolerance.
        seed: seed of the numpy generator drawing the garbage.
    """
    sets, mask_list, multi = _as_sets(inputs, masks)
    if mask_list is None:
        mask_list = [np.ones(x.shape[:2], dtype=bool) for x in sets]
    reference = _call_set_fn(fn, sets, mask_list, multi)
    rng = np.random.default_rng(seed)
    padded_sets, padded_masks = [], []
    for x, m in zip(sets, mask_list, strict=True):
        padded_shape = (x.shape[0], x.shape[1] + extra) + x.shape[2:]
        garbage = _garbage(rng, x, padded_shape)
        keep = m.reshape(m.shape + (1,) * (x.ndim - 2))
        garbage[:, : x.shape[1]] = np.where(keep, x, garbage[:, : x.shape[1]])
        padded_sets.append(garbage)
        padded_masks.append(
            np.concatenate([m, np.zeros((m.shape[0], extra), bool)], axis=1)
        )
    out = _call_set_fn(fn, padded_sets, padded_masks, multi)
    what = f"{extra} garbage elements appended, padded positions overwritten"
    if not equivariant:
        assert_all_close(
            out,
            reference,
            atol=atol,
            rtol=atol,
            msg=f"Output changed when padding changed ({what})",
        )
        return
    out_list = list(out) if multi else [out]
    reference_list = list(reference) if multi else [reference]
    for k, (o, r, m) in enumerate(
        zip(out_list, reference_list, mask_list, strict=True)
    ):
        n = m.shape[1]
        if o.shape[:2] != (m.shape[0], n + extra):
            raise AssertionError(
                f"Equivariant output {k} has shape {o.shape}; expected it "
                f"to start with [batch, set_size] = {(m.shape[0], n + extra)}."
            )
        assert_all_close(
            o[:, :n][m],
            r[m],
            atol=atol,
            rtol=atol,
            msg=f"Output {k} changed on valid positions ({what})",
        )
