"""A user's own model: `user_models.tiny:make` (tests/ on PYTHONPATH). Small, so a probe runs in seconds."""
import torch
from torch import nn


def make():
    """A two-layer MLP and a batch of 8 random inputs; the default loss trains it."""
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    return model, torch.randn(8, 64)


def make_with_loss():
    """A classifier with its own forward and loss: (model, (inputs, labels), loss_fn(model, batch))."""
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def loss_fn(model, batch):
        inputs, labels = batch
        return nn.functional.cross_entropy(model(inputs), labels)

    return model, (torch.randn(6, 16), torch.randint(0, 4, (6,))), loss_fn


def make_keywords_model():
    """A model whose forward takes keywords (the batch is a dict)."""

    class Keywords(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(16, 4)

        def forward(self, x, labels):
            return nn.functional.cross_entropy(self.linear(x), labels)

    return Keywords(), {"x": torch.randn(6, 16), "labels": torch.randint(0, 4, (6,))}


def wrong_return():
    """Not (model, batch): the model alone."""
    return nn.Linear(4, 4)


def not_a_model():
    return "linear", torch.randn(2, 4)


def tuple_output():
    """The output is a tuple: the default loss needs a tensor."""

    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x):
            return self.linear(x), x

    return Pair(), torch.randn(2, 4)


NOT_A_FUNCTION = 3


def raises():
    """The user's function fails."""
    raise RuntimeError("weights not found")


def too_big():
    """A model whose forward asks for 4 TiB, more than any machine here may allocate: every run of it fails."""

    class TooBig(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x):
            scratch = torch.empty(2 ** 40, device=x.device)  # 4 TiB of float32
            return self.linear(x) + scratch[:1]

    return TooBig(), torch.randn(2, 4)
