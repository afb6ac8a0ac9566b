"""Offline evaluation: the thesis's experiments (SQuAD 2.0, cloud FAQ), MIRAGE, threshold calibration and the
derivation of ragtap's default thresholds.  The maths (ROC/AUC, F-scores, logistic regression) is in `stats`;
dataset loaders in `datasets`; generation through ragtap's own proxy in `generate`.

Nothing here is imported by the proxy: `ragtap experiment` and `ragtap calibrate` load it on demand.
"""
