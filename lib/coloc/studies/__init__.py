"""Studies built on the simulator: they sit above ``coloc.policies`` and ``coloc.sim`` and use both.

``experiment`` runs one policy on one trace and cluster; ``scenarios`` expands the config's scenarios into those
runs and saves their tables; ``footprint`` estimates a simulate job's memory; ``delay`` times scheduling rounds
against the queue's length; ``probing`` profiles new job families before they are placed; ``regret`` compares
every deployable policy with coloc's bound; ``calibrate`` fits trace durations to published times. The engine
below (``coloc.sim``) imports none of these, nor any policy.
"""
