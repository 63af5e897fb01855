"""Text classifiers of Wang et al. (ICLR 2020, Table 2) and their recipe."""
