"""Recipe of `complex_order_transformer_mr`: complex-order embeddings and a
Transformer classify MR sentences, as the CNN preset's recipe, with
word amplitudes from random values as in the paper and a Transformer of
64 complex units, 4 heads and inner size 128. `--help` runs it."""

from keras_msets.training.tasks.complex_order_mr import complex_order_recipe

PAPER = {"complex_order": 0.746, "pe": 0.737, "tpe": 0.731}  # Table 2, MR
# Amplitudes from random values (no GloVe), as in the paper.
HYPER = dict(glove=False, embedding_dim=64, num_heads=4, intermediate_dim=128)
TASK, RECIPE = complex_order_recipe(__file__, "transformer", PAPER, **HYPER)
encode = TASK.encode  # raw sentences -> the preset's token ids

if __name__ == "__main__":
    RECIPE.main()
