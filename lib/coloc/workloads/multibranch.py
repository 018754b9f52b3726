"""Concatenating CNNs: DenseNet-121, GoogLeNet, Inception-v3.

`small=True` adapts a network to 32x32 CIFAR inputs by replacing the down-sampling stem
with a stride-1 3x3 convolution; False is the ImageNet network as published.
"""
from __future__ import annotations

import torch
from torch import nn


def bn_relu_conv(cin: int, cout: int, kernel: int) -> nn.Sequential:
    return nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True),
                         nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=False))


class DenseLayer(nn.Module):
    """Bottleneck dense layer on the concatenation of all earlier feature maps."""

    def __init__(self, cin: int, growth: int, bottleneck: int = 4):
        super().__init__()
        self.body = nn.Sequential(bn_relu_conv(cin, bottleneck * growth, 1),
                                  bn_relu_conv(bottleneck * growth, growth, 3))

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return self.body(torch.cat(features, 1))


class DenseBlock(nn.Module):
    def __init__(self, cin: int, layers: int, growth: int):
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * growth, growth) for i in range(layers))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


def densenet121(classes: int, small: bool, growth: int = 32) -> nn.Sequential:
    """DenseNet-121 (blocks 6/12/24/16, growth 32, compression 0.5)."""
    if small:
        mods = [nn.Conv2d(3, 64, 3, 1, 1, bias=False)]
    else:
        mods = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for i, layers in enumerate([6, 12, 24, 16]):
        mods.append(DenseBlock(cin, layers, growth))
        cin += layers * growth
        if i < 3:
            mods += [bn_relu_conv(cin, cin // 2, 1), nn.AvgPool2d(2, 2)]
            cin //= 2
    mods += [nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
             nn.Linear(cin, classes)]
    return nn.Sequential(*mods)


def conv_bn_relu(cin, cout, kernel, stride=1, padding=None, eps=1e-5) -> nn.Sequential:
    if padding is None:
        padding = (kernel[0] // 2, kernel[1] // 2) if isinstance(kernel, tuple) else kernel // 2
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, padding, bias=False),
                         nn.BatchNorm2d(cout, eps=eps), nn.ReLU(inplace=True))


class Branches(nn.Module):
    """Run parallel branches on one input and concatenate their outputs along channels."""

    def __init__(self, *branches: nn.Module):
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x):
        return torch.cat([b(x) for b in self.branches], 1)


def inception_v1(cin, c1, r3, c3, r5, c5, pool) -> Branches:
    """GoogLeNet inception module (1x1 | 1x1-3x3 | 1x1-5x5 | pool-1x1), with batch norm."""
    return Branches(conv_bn_relu(cin, c1, 1),
                    nn.Sequential(conv_bn_relu(cin, r3, 1), conv_bn_relu(r3, c3, 3)),
                    nn.Sequential(conv_bn_relu(cin, r5, 1), conv_bn_relu(r5, c5, 5)),
                    nn.Sequential(nn.MaxPool2d(3, 1, 1), conv_bn_relu(cin, pool, 1)))


def googlenet(classes: int, small: bool) -> nn.Sequential:
    """GoogLeNet (Inception v1) with batch norm, without the auxiliary classifiers."""
    def pool():
        return nn.MaxPool2d(3, 2, ceil_mode=True)

    if small:
        mods = [conv_bn_relu(3, 192, 3)]
    else:
        mods = [conv_bn_relu(3, 64, 7, 2), pool(), conv_bn_relu(64, 64, 1),
                conv_bn_relu(64, 192, 3), pool()]
    mods += [inception_v1(192, 64, 96, 128, 16, 32, 32), inception_v1(256, 128, 128, 192, 32, 96, 64),
             pool(),
             inception_v1(480, 192, 96, 208, 16, 48, 64), inception_v1(512, 160, 112, 224, 24, 64, 64),
             inception_v1(512, 128, 128, 256, 24, 64, 64), inception_v1(512, 112, 144, 288, 32, 64, 64),
             inception_v1(528, 256, 160, 320, 32, 128, 128),
             pool(),
             inception_v1(832, 256, 160, 320, 32, 128, 128), inception_v1(832, 384, 192, 384, 48, 128, 128),
             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.4), nn.Linear(1024, classes)]
    return nn.Sequential(*mods)


def _c(cin, cout, kernel, stride=1, padding=None):
    """Inception-v3 basic convolution (batch-norm eps 1e-3)."""
    return conv_bn_relu(cin, cout, kernel, stride, padding, eps=1e-3)


def _seq(*mods):
    return nn.Sequential(*mods)


def inception_a(cin: int, pool: int) -> Branches:
    return Branches(_c(cin, 64, 1),
                    _seq(_c(cin, 48, 1), _c(48, 64, 5)),
                    _seq(_c(cin, 64, 1), _c(64, 96, 3), _c(96, 96, 3)),
                    _seq(nn.AvgPool2d(3, 1, 1), _c(cin, pool, 1)))


def inception_b(cin: int) -> Branches:
    return Branches(_c(cin, 384, 3, 2, 0),
                    _seq(_c(cin, 64, 1), _c(64, 96, 3), _c(96, 96, 3, 2, 0)),
                    nn.MaxPool2d(3, 2))


def inception_c(cin: int, c7: int) -> Branches:
    return Branches(_c(cin, 192, 1),
                    _seq(_c(cin, c7, 1), _c(c7, c7, (1, 7)), _c(c7, 192, (7, 1))),
                    _seq(_c(cin, c7, 1), _c(c7, c7, (7, 1)), _c(c7, c7, (1, 7)),
                         _c(c7, c7, (7, 1)), _c(c7, 192, (1, 7))),
                    _seq(nn.AvgPool2d(3, 1, 1), _c(cin, 192, 1)))


def inception_d(cin: int) -> Branches:
    return Branches(_seq(_c(cin, 192, 1), _c(192, 320, 3, 2, 0)),
                    _seq(_c(cin, 192, 1), _c(192, 192, (1, 7)), _c(192, 192, (7, 1)),
                         _c(192, 192, 3, 2, 0)),
                    nn.MaxPool2d(3, 2))


def inception_e(cin: int) -> Branches:
    def split(c):
        return Branches(_c(c, 384, (1, 3)), _c(c, 384, (3, 1)))

    return Branches(_c(cin, 320, 1),
                    _seq(_c(cin, 384, 1), split(384)),
                    _seq(_c(cin, 448, 1), _c(448, 384, 3), split(384)),
                    _seq(nn.AvgPool2d(3, 1, 1), _c(cin, 192, 1)))


def inception_v3(classes: int) -> nn.Sequential:
    """Inception-v3 for 299x299 inputs, without the auxiliary classifier."""
    return nn.Sequential(
        _c(3, 32, 3, 2, 0), _c(32, 32, 3, 1, 0), _c(32, 64, 3), nn.MaxPool2d(3, 2),
        _c(64, 80, 1), _c(80, 192, 3, 1, 0), nn.MaxPool2d(3, 2),
        inception_a(192, 32), inception_a(256, 64), inception_a(288, 64),
        inception_b(288),
        inception_c(768, 128), inception_c(768, 160), inception_c(768, 160), inception_c(768, 192),
        inception_d(768),
        inception_e(1280), inception_e(2048),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.5), nn.Linear(2048, classes))
