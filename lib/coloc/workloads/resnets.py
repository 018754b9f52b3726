"""Residual CNNs: ResNet-18/50 (CIFAR and ImageNet stems), WideResNet-28-10, ResNeXt-29 (2x64d)."""
from __future__ import annotations

import torch
from torch import nn


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    """Convolution without bias followed by batch norm (no activation)."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    )


def shortcut(cin: int, cout: int, stride: int) -> nn.Module:
    """Identity when shapes agree, else a strided 1x1 projection."""
    if stride == 1 and cin == cout:
        return nn.Identity()
    return conv_bn(cin, cout, 1, stride)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection (ResNet-18/34)."""

    def __init__(self, cin: int, planes: int, stride: int):
        super().__init__()
        self.conv1 = conv_bn(cin, planes, 3, stride)
        self.conv2 = conv_bn(planes, planes, 3)
        self.relu = nn.ReLU(inplace=True)
        self.skip = shortcut(cin, planes, stride)
        self.out_channels = planes

    def forward(self, x):
        out = self.relu(self.conv1(x))
        return self.relu(self.conv2(out) + self.skip(x))


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (optionally grouped, carries the stride), 1x1 expand; residual."""

    def __init__(self, cin: int, width: int, cout: int, stride: int, groups: int = 1):
        super().__init__()
        self.reduce = conv_bn(cin, width, 1)
        self.conv = conv_bn(width, width, 3, stride, groups)
        self.expand = conv_bn(width, cout, 1)
        self.relu = nn.ReLU(inplace=True)
        self.skip = shortcut(cin, cout, stride)
        self.out_channels = cout

    def forward(self, x):
        out = self.relu(self.reduce(x))
        out = self.relu(self.conv(out))
        return self.relu(self.expand(out) + self.skip(x))


def stem(kind: str, cout: int) -> nn.Sequential:
    """ImageNet stem (7x7/2 conv, 3x3/2 max-pool) or CIFAR stem (3x3/1 conv)."""
    if kind == "imagenet":
        return nn.Sequential(nn.Conv2d(3, cout, 7, 2, 3, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
    if kind == "cifar":
        return nn.Sequential(nn.Conv2d(3, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True))
    raise ValueError(f"stem kind {kind!r} unknown; expected 'imagenet' or 'cifar'")


class ClassifierNet(nn.Module):
    """stem -> stages -> (final layers) -> global average pool -> linear."""

    def __init__(self, stem: nn.Module, stages: nn.Sequential, features: int, classes: int,
                 head: nn.Module | None = None):
        super().__init__()
        self.stem = stem
        self.stages = stages
        self.head = head if head is not None else nn.Identity()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(features, classes)

    def forward(self, x):
        x = self.head(self.stages(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def resnet(depth: int, classes: int, stem_kind: str) -> ClassifierNet:
    """ResNet-18 (BasicBlock [2,2,2,2]) or ResNet-50 (Bottleneck [3,4,6,3], v1.5 strides)."""
    layout = {18: [2, 2, 2, 2], 50: [3, 4, 6, 3]}[depth]
    blocks, cin = [], 64
    for stage, repeats in enumerate(layout):
        planes = 64 * 2 ** stage
        for i in range(repeats):
            stride = 2 if stage > 0 and i == 0 else 1
            block = (BasicBlock(cin, planes, stride) if depth == 18
                     else Bottleneck(cin, planes, planes * 4, stride))
            blocks.append(block)
            cin = block.out_channels
    return ClassifierNet(stem(stem_kind, 64), nn.Sequential(*blocks), cin, classes)


def resnext29(classes: int, cardinality: int = 2, group_width: int = 64) -> ClassifierNet:
    """ResNeXt-29 for CIFAR: 3 stages x 3 bottlenecks, grouped 3x3 convs (default 2x64d)."""
    blocks, cin = [], 64
    for stage in range(3):
        width = cardinality * group_width * 2 ** stage
        for i in range(3):
            stride = 2 if stage > 0 and i == 0 else 1
            blocks.append(Bottleneck(cin, width, 2 * width, stride, groups=cardinality))
            cin = 2 * width
    return ClassifierNet(stem("cifar", 64), nn.Sequential(*blocks), cin, classes)


class WideBlock(nn.Module):
    """Pre-activation wide block: BN-ReLU-conv3x3-dropout-BN-ReLU-conv3x3, residual."""

    def __init__(self, cin: int, cout: int, stride: int, dropout: float):
        super().__init__()
        self.bn1, self.bn2 = nn.BatchNorm2d(cin), nn.BatchNorm2d(cout)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.relu = nn.ReLU()
        self.drop = nn.Dropout(dropout)
        self.skip = (nn.Identity() if stride == 1 and cin == cout
                     else nn.Conv2d(cin, cout, 1, stride, bias=False))

    def forward(self, x):
        out = self.conv1(self.relu(self.bn1(x)))
        out = self.conv2(self.relu(self.bn2(self.drop(out))))
        return out + self.skip(x)


def wide_resnet(classes: int, depth: int = 28, widen: int = 10, dropout: float = 0.3) -> ClassifierNet:
    """WRN-depth-widen for CIFAR (Zagoruyko & Komodakis): default WRN-28-10."""
    per_stage = (depth - 4) // 6
    blocks, cin = [], 16
    for stage in range(3):
        cout = 16 * widen * 2 ** stage
        for i in range(per_stage):
            blocks.append(WideBlock(cin, cout, 2 if stage > 0 and i == 0 else 1, dropout))
            cin = cout
    head = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU())
    first = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
    return ClassifierNet(first, nn.Sequential(*blocks), cin, classes, head)
