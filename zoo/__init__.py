"""Pretrained presets; installed with the wheel as `keras_msets._presets`."""
