"""SLOW REFERENCE implementation of the simulator's placement code, kept only for the exactness test.

Verbatim copies, as of commit 1487f24 (before the work on cluster scale), of coloc.policies' policy
modules and of coloc.sim.cluster.Cluster, with imports pointed here: every policy scans every
shareable GPU. Policies register in this package's own registry (`reference_sim.base.get`), never in
coloc.policies. tests/test_sim_exactness.py runs each policy both ways and requires identical per-job
results. Do not edit except to follow an intended change of a policy's decisions.
"""
