"""Checks of the exact answers: Monte Carlo for the Student-t closed form.

For each multivariate Student-t problem, `E[log p(x, y) - log p(x) -
log p(y)]` over 200,000 draws (scipy's `multivariate_t` densities) with
its standard error, beside the closed form the problem uses.
"""

import numpy as np
from scipy import stats

from estimator_bench import problems as problem_sets

DRAWS = 200_000


def student_t_checks(draws=DRAWS, seed=1):
    rows = []
    for problem in problem_sets.mi_problems():
        if problem.family != "student_t":
            continue
        nu = problem.nu
        dx, dy = problem.dim_x, problem.dim_y
        scale = problem.scale_matrix
        joint = stats.multivariate_t(np.zeros(dx + dy), scale, df=nu)
        z = joint.rvs(size=draws, random_state=seed)
        x_part = stats.multivariate_t(np.zeros(dx), scale[:dx, :dx], df=nu)
        y_part = stats.multivariate_t(np.zeros(dy), scale[dx:, dx:], df=nu)
        terms = (
            joint.logpdf(z)
            - x_part.logpdf(z[:, :dx])
            - y_part.logpdf(z[:, dx:])
        )
        rows.append(
            {
                "problem": problem.name,
                "closed_form": problem.truth,
                "monte_carlo": float(terms.mean()),
                "standard_error": float(terms.std() / np.sqrt(draws)),
                "draws": draws,
            }
        )
    return rows
