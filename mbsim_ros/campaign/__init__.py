"""Test campaigns (docs/CAMPAIGNS.md): thousands of randomized runs of one spec, judged and
tabulated, on this machine or a Ray cluster. ``spec`` (the schemas), ``sampling`` (the draws),
``apply`` (a run's Simulator), ``controllers``, ``checks``, ``run`` (one run, pure),
``runner`` (Ray tasks and the results table), ``report``."""
