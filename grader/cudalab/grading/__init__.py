"""One grade and its measurements: the checker's verdicts, paced timing and its
audit, the sanitizer, scores, calibration, and the ladder of reference variants.
"""
