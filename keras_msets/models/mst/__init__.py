"""Multi-Set Transformers (Selby et al., UAI 2022) and their baselines."""
