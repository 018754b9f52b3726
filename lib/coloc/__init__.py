"""coloc: interference-aware scheduling of deep-learning training jobs that share GPUs."""

__version__ = "0.1.0"
