"""Draft cases: a recorded session turned into a case (``evaltape add``), appended to a suite."""
