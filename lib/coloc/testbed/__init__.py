"""The real testbed: a trace of real training jobs on this machine's devices, placed by any registered policy
through the simulator's `SchedulerView`, and the simulator held against what happened.

* :mod:`coloc.testbed.devices`: CUDA GPUs by index, or CPU core sets playing the part of GPUs;
* :mod:`coloc.testbed.trace`: a trace shaped like ISACPP's testbed (all jobs at once, short, several types);
* :mod:`coloc.testbed.process`: one job's training process (the profiler's worker, stoppable, from a count);
* :mod:`coloc.testbed.runner`: the runner (the view, rounds, launches, stops, measured factors, the journal);
* :mod:`coloc.testbed.compare`: the same trace replayed in the simulator on the profiled tables, and the
  comparison (mean JCT, makespan, per-job ratios, rankings);
* :mod:`coloc.testbed.experiment`: every step end to end, kept on disk (``scripts/testbed.py``).
"""
