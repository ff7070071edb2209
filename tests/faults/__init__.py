"""Fault fixtures the tests start themselves: fake Slurm commands (fake_slurm), a fake
Prometheus on 127.0.0.1 (fake_prometheus) and damaged recordings (bad_recordings).
Each fault is a mode of a fake that the test can switch while quotatop watches it."""
