"""SLOW REFERENCE implementation of the simulator's placement code, kept only for the exactness test.

Verbatim copies, as of commit 1487f24 (before the work on cluster scale), of coloc.policies' policy modules and of
coloc.sim.cluster.Cluster, with imports pointed here: every policy scans every shareable GPU. It stands alone from
the code it checks: its own wait queue (`queue`: one sorted list of entries walked from its start for every
question, in place of coloc.sim.queue's buckets), its own copy of coloc.policies.stages (`stages`), of volcano's
memory rule and draw, and its own lookups of the predicted values (`predictions`, in place of
coloc.sim.predictions'). What it shares with the fast path is the engine (coloc.sim.engine, view, job, the truth),
which both runs drive alike. Policies register in this package's own registry (`reference_sim.base.get`), never in
coloc.policies. tests/test_sim_exactness.py runs each policy both ways and requires identical per-job results. Do
not edit except to follow an intended change of a policy's decisions.
"""
