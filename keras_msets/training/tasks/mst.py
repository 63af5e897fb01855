"""The Multi-Set Transformer tasks by name, for benchmarks and scripts.

`task(name)` gives a task object with its App. B defaults; the functions
below keep the by-name calls of the benchmarks (`fit_estimator(model,
"kl_divergence", dims, ...)`) short. The recipes use the task classes
directly (`keras_msets.training.tasks`).
"""

from keras_msets.training.set_batches import batch_seed
from keras_msets.training.set_batches import fit_sets
from keras_msets.training.tasks.kl_divergence import PAPER_KL_MAE
from keras_msets.training.tasks.kl_divergence import PAPER_KNN_KL_MAE
from keras_msets.training.tasks.kl_divergence import KLDivergence
from keras_msets.training.tasks.mutual_information import JointMutualInformation
from keras_msets.training.tasks.mutual_information import MutualInformation
from keras_msets.training.tasks.set_models import OMNIGLOT_FILTERS
from keras_msets.training.tasks.set_models import build_counting_model
from keras_msets.training.tasks.set_models import build_image_encoder
from keras_msets.training.tasks.set_models import build_model
from keras_msets.training.tasks.set_models import build_omniglot_encoder
from keras_msets.training.tasks.set_task import TEST_SEED
from keras_msets.training.tasks.set_task import print_metrics
from keras_msets.training.tasks.shared_class_count import COUNTING_SOURCE
from keras_msets.training.tasks.shared_class_count import PAPER_COUNTING_MNIST
from keras_msets.training.tasks.shared_class_count import SharedClassCount
from keras_msets.training.tasks.shared_class_count import counting_scores
from keras_msets.training.tasks.shared_class_count import pretrain_encoder
from keras_msets.training.tasks.two_sample import PAPER_TWO_SAMPLE_ACCURACY
from keras_msets.training.tasks.two_sample import TWO_SAMPLE_DIM
from keras_msets.training.tasks.two_sample import TwoSample
from keras_msets.utils.validation import check_choice

TASK_CLASSES = {
    "kl_divergence": KLDivergence,
    "mutual_information": MutualInformation,
    "mutual_information_joint": JointMutualInformation,
    "two_sample": TwoSample,
    "counting": SharedClassCount,
}
TASKS = tuple(TASK_CLASSES)

__all__ = [
    "COUNTING_SOURCE",
    "OMNIGLOT_FILTERS",
    "PAPER_COUNTING_MNIST",
    "PAPER_KL_MAE",
    "PAPER_KNN_KL_MAE",
    "PAPER_TWO_SAMPLE_ACCURACY",
    "TASKS",
    "TEST_SEED",
    "TWO_SAMPLE_DIM",
    "batch_seed",
    "build_counting_model",
    "build_image_encoder",
    "build_model",
    "build_omniglot_encoder",
    "counting_scores",
    "defaults",
    "evaluate_counting",
    "evaluate_kl_divergence",
    "evaluate_mutual_information",
    "evaluate_two_sample",
    "fit_estimator",
    "fit_sets",
    "make_batch",
    "pretrain_encoder",
    "task",
    "test_set",
]


def task(name, source=None):
    """The task `name` (one of `TASKS`) with its App. B defaults;
    `source`: the counting task's image source (None for the others)."""
    check_choice("task", name, TASKS)
    if source is None:
        return TASK_CLASSES[name]()
    if TASK_CLASSES[name] is not SharedClassCount:
        raise ValueError(
            "`source` (the image source) applies to the counting task "
            f"only; task {name!r} takes source=None. Received: "
            f"source={source!r}"
        )
    return SharedClassCount(source=source)


def defaults(name):
    """App. B's `batch_size`, `learning_rate`, `paper_steps`, `loss` and
    `set_size` of task `name`."""
    cls = TASK_CLASSES[check_choice("task", name, TASKS)]
    return dict(
        cls.defaults,
        paper_steps=cls.paper_steps,
        loss=cls.loss,
        set_size=cls.set_size,
        dim_weight_power=cls.dim_weight_power,
    )


def fit_estimator(model, task_name, dims=None, *args, source=None, **kwargs):
    """`fit_sets(model, task(task_name, source), dims, ...)`."""
    return fit_sets(model, task(task_name, source), dims, *args, **kwargs)


def make_batch(task_name, batch_size, dim, seed, set_size=None, source=None):
    """One training batch `(inputs, targets)` of task `task_name`."""
    return task(task_name, source).make_batch(batch_size, dim, seed, set_size)


def test_set(task_name, num, dim=None, seed=TEST_SEED, source=None):
    """`(raw, inputs, targets)` of task `task_name`'s fixed test set."""
    return task(task_name, source).test_set(num, dim, seed)


def evaluate_kl_divergence(
    model, dims=(2, 4, 8, 16), num=1000, seed=TEST_SEED, batch_size=64,
    verbose=0,
):  # fmt: skip
    """`KLDivergence.evaluate_dims`."""
    metrics = KLDivergence().evaluate_dims(model, dims, num, seed, batch_size)
    print_metrics(metrics, verbose)
    return metrics


def evaluate_mutual_information(
    model,
    dims=(2, 10, 20),
    num=1000,
    seed=TEST_SEED,
    batch_size=64,
    verbose=0,
    task="mutual_information",
    split_model=None,
    estimator_permutations=None,
):
    """`MutualInformation.evaluate_dims` (`task="mutual_information"`) or
    `JointMutualInformation.evaluate_dims` (`"mutual_information_joint"`,
    with `split_model` and `estimator_permutations`)."""
    choices = ("mutual_information", "mutual_information_joint")
    evaluator = TASK_CLASSES[check_choice("task", task, choices)]()
    if split_model is not None or estimator_permutations is not None:
        if not evaluator.joint:
            raise ValueError(
                "`split_model` and `estimator_permutations` are for the "
                f"joint task only. Received: task={task!r}, "
                f"estimator_permutations={estimator_permutations!r}"
            )
        if split_model is not None:
            evaluator.split = ("split", lambda: split_model)
        evaluator.estimator_permutations = estimator_permutations
    metrics = evaluator.evaluate_dims(model, dims, num, seed, batch_size)
    print_metrics(metrics, verbose)
    return metrics


def evaluate_two_sample(
    model, num=2000, seed=TEST_SEED, batch_size=256, verbose=0
):
    """`TwoSample.evaluate_pairs`."""
    metrics = TwoSample().evaluate_pairs(model, num, seed, batch_size)
    print_metrics(metrics, verbose)
    return metrics


def evaluate_counting(
    model, num=1000, seed=TEST_SEED, batch_size=64, verbose=0, source=None
):
    """`SharedClassCount.evaluate_counts` on the test split of `source`."""
    evaluator = SharedClassCount(source=source)
    metrics = evaluator.evaluate_counts(model, num, seed, batch_size)
    print_metrics(metrics, verbose)
    return metrics
