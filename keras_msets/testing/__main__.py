"""`python -m keras_msets.testing write ...` is the golden-file writer."""

import sys

from keras_msets.testing.golden import main

sys.exit(main())
