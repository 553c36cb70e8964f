"""Statistics: pure functions over counts, on scipy.

``evaltape.scoring`` re-exports the few most programs need (``wilson``,
``pass_at_k``, ``pass_hat_k``, ``mcnemar_exact``, ``sign_flip_test``); the rest are public here.
"""

from ._drift import run_variance
from ._plan import PowerPlan, plan_power, planned_power, shrunk_rates
from ._power import cases_needed, paired_power
from ._signflip import SignFlip, SignFlipMethod, sign_flip_test
from ._stats import (
    ZTest,
    benjamini_hochberg,
    clustered_se,
    cohens_h,
    fisher_exact,
    mcnemar_exact,
    paired_t_interval,
    pass_at_k,
    pass_hat_k,
    suite_interval,
    suite_rate,
    two_proportion_z,
    wilson,
)

__all__ = [
    "PowerPlan",
    "SignFlip",
    "SignFlipMethod",
    "ZTest",
    "benjamini_hochberg",
    "cases_needed",
    "clustered_se",
    "cohens_h",
    "fisher_exact",
    "mcnemar_exact",
    "paired_power",
    "paired_t_interval",
    "pass_at_k",
    "pass_hat_k",
    "plan_power",
    "planned_power",
    "run_variance",
    "shrunk_rates",
    "sign_flip_test",
    "suite_interval",
    "suite_rate",
    "two_proportion_z",
    "wilson",
]
