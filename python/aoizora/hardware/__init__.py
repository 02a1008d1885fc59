"""The hardware model's inputs: hardware profiles and their provenance, the published
measurements, calibration (fitting a profile to measured points), leave-one-out checks and
the error bands they give."""
