"""Analysis of `schedlab run` results: loading, statistics, figures, the report and comparisons.

Entry points are `python -m schedlab_results.plot` and `python -m schedlab_results.compare`,
normally started through scripts/plot and scripts/compare (which pick a suitable interpreter).
"""
