"""Recipe of `complex_order_cnn_mr`: complex-order embeddings and a CNN
classify MR sentences (declared in `keras_msets.training.tasks
.complex_order_mr`; needs `keras-msets data fetch mr`); `--help` runs it."""

from keras_msets.training.tasks.complex_order_mr import complex_order_recipe

TASK, RECIPE = complex_order_recipe(
    __file__,
    "cnn",
    paper={"complex_order": 0.825, "pe": 0.816, "tpe": 0.815},  # Table 2
    glove=True,  # amplitudes start from GloVe 6B 50-d
    filters=64,
)
encode = TASK.encode  # raw sentences -> the preset's token ids

if __name__ == "__main__":
    RECIPE.main()
