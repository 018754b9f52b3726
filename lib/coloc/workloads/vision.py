"""Plain and mobile CNNs: VGG-11/16/19, MobileNetV2, SqueezeNet 1.0, ShuffleNetV2 1.0x, EfficientNet-B0.

Each builder takes `classes` and `small`: small=True adapts the ImageNet network to 32x32
CIFAR inputs by removing early down-sampling (the usual CIFAR adaptation); False is the
ImageNet network as published.
"""
from __future__ import annotations

import torch
from torch import nn

VGG_LAYOUTS = {  # conv widths per stage; each stage ends in a 2x2 max-pool
    11: [[64], [128], [256, 256], [512, 512], [512, 512]],
    16: [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]],
    19: [[64, 64], [128, 128], [256] * 4, [512] * 4, [512] * 4],
}


def vgg(depth: int, classes: int, small: bool) -> nn.Sequential:
    """VGG: ImageNet version without batch norm and 4096-wide classifier; CIFAR version with
    batch norm and one linear layer."""
    layers, cin = [], 3
    for widths in VGG_LAYOUTS[depth]:
        for w in widths:
            layers.append(nn.Conv2d(cin, w, 3, padding=1))
            if small:
                layers.append(nn.BatchNorm2d(w))
            layers.append(nn.ReLU(inplace=True))
            cin = w
        layers.append(nn.MaxPool2d(2, 2))
    if small:
        head = [nn.Flatten(), nn.Linear(512, classes)]
    else:
        head = [nn.AdaptiveAvgPool2d(7), nn.Flatten(),
                nn.Linear(512 * 49, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
                nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
                nn.Linear(4096, classes)]
    return nn.Sequential(*layers, *head)


def conv_bn_act(cin, cout, kernel, stride=1, groups=1, act=nn.ReLU6) -> nn.Sequential:
    """Convolution (no bias), batch norm, then `act` (None for linear)."""
    mods = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout)]
    if act is not None:
        mods.append(act(inplace=True))
    return nn.Sequential(*mods)


class InvertedResidual(nn.Module):
    """MobileNetV2 block: 1x1 expand, 3x3 depthwise, 1x1 linear project; residual if shapes match."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        mods = [conv_bn_act(cin, hidden, 1)] if expand != 1 else []
        mods += [conv_bn_act(hidden, hidden, 3, stride, groups=hidden),
                 conv_bn_act(hidden, cout, 1, act=None)]
        self.body = nn.Sequential(*mods)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


MOBILENETV2_STAGES = [  # expansion, channels, repeats, stride
    (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
    (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenet_v2(classes: int, small: bool) -> nn.Sequential:
    """MobileNetV2 (width 1.0); CIFAR: stem and second stage at stride 1."""
    layers, cin = [conv_bn_act(3, 32, 3, 1 if small else 2)], 32
    for i, (t, c, n, s) in enumerate(MOBILENETV2_STAGES):
        stride = 1 if small and i == 1 else s
        for j in range(n):
            layers.append(InvertedResidual(cin, c, stride if j == 0 else 1, t))
            cin = c
    layers += [conv_bn_act(cin, 1280, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Dropout(0.2), nn.Linear(1280, classes)]
    return nn.Sequential(*layers)


class Fire(nn.Module):
    """SqueezeNet fire module: 1x1 squeeze, then parallel 1x1 and 3x3 expands, concatenated."""

    def __init__(self, cin: int, squeeze: int, expand1: int, expand3: int):
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU(inplace=True))
        self.expand1 = nn.Sequential(nn.Conv2d(squeeze, expand1, 1), nn.ReLU(inplace=True))
        self.expand3 = nn.Sequential(nn.Conv2d(squeeze, expand3, 3, padding=1), nn.ReLU(inplace=True))

    def forward(self, x):
        s = self.squeeze(x)
        return torch.cat([self.expand1(s), self.expand3(s)], 1)


def squeezenet(classes: int, small: bool) -> nn.Sequential:
    """SqueezeNet 1.0; CIFAR: 3x3 stride-1 first convolution."""
    first = nn.Conv2d(3, 96, 3, 1, 1) if small else nn.Conv2d(3, 96, 7, 2)

    def pool():
        return nn.MaxPool2d(3, 2, ceil_mode=True)

    return nn.Sequential(
        first, nn.ReLU(inplace=True), pool(),
        Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128), pool(),
        Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192),
        Fire(384, 64, 256, 256), pool(), Fire(512, 64, 256, 256),
        nn.Dropout(0.5), nn.Conv2d(512, classes, 1), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten())


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


class ShuffleUnit(nn.Module):
    """ShuffleNetV2 unit: channel split (stride 1) or two down-sampling branches (stride 2)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        half = cout // 2
        self.stride = stride
        self.left = (nn.Sequential(conv_bn_act(cin, cin, 3, stride, cin, None),
                                   conv_bn_act(cin, half, 1, act=nn.ReLU))
                     if stride == 2 else None)
        right_in = cin if stride == 2 else half
        self.right = nn.Sequential(conv_bn_act(right_in, half, 1, act=nn.ReLU),
                                   conv_bn_act(half, half, 3, stride, half, None),
                                   conv_bn_act(half, half, 1, act=nn.ReLU))

    def forward(self, x):
        if self.stride == 1:
            a, b = x.chunk(2, dim=1)
            out = torch.cat([a, self.right(b)], 1)
        else:
            out = torch.cat([self.left(x), self.right(x)], 1)
        return channel_shuffle(out, 2)


def shufflenet_v2(classes: int, small: bool) -> nn.Sequential:
    """ShuffleNetV2 1.0x (stages 4/8/4, widths 116/232/464); CIFAR: no stem down-sampling."""
    layers = [conv_bn_act(3, 24, 3, 1 if small else 2, act=nn.ReLU)]
    if not small:
        layers.append(nn.MaxPool2d(3, 2, 1))
    cin = 24
    for repeats, cout in [(4, 116), (8, 232), (4, 464)]:
        for i in range(repeats):
            layers.append(ShuffleUnit(cin, cout, 2 if i == 0 else 1))
            cin = cout
    layers += [conv_bn_act(cin, 1024, 1, act=nn.ReLU), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Linear(1024, classes)]
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    """Channel attention: global pool, reduce, SiLU, expand, sigmoid gate."""

    def __init__(self, channels: int, squeeze: int):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(channels, squeeze, 1)
        self.expand = nn.Conv2d(squeeze, channels, 1)
        self.act, self.gate = nn.SiLU(inplace=True), nn.Sigmoid()

    def forward(self, x):
        return x * self.gate(self.expand(self.act(self.reduce(self.pool(x)))))


class MBConv(nn.Module):
    """EfficientNet block: expand, depthwise kxk, squeeze-excite, linear project; residual."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        mods = [conv_bn_act(cin, hidden, 1, act=nn.SiLU)] if expand != 1 else []
        mods += [conv_bn_act(hidden, hidden, kernel, stride, hidden, nn.SiLU),
                 SqueezeExcite(hidden, max(1, cin // 4)),
                 conv_bn_act(hidden, cout, 1, act=None)]
        self.body = nn.Sequential(*mods)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


EFFICIENTNET_B0_STAGES = [  # expansion, kernel, stride, channels, repeats
    (1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
    (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]


def efficientnet_b0(classes: int, small: bool) -> nn.Sequential:
    """EfficientNet-B0 (without stochastic depth); CIFAR: stride-1 stem."""
    layers, cin = [conv_bn_act(3, 32, 3, 1 if small else 2, act=nn.SiLU)], 32
    for t, k, s, c, n in EFFICIENTNET_B0_STAGES:
        for j in range(n):
            layers.append(MBConv(cin, c, k, s if j == 0 else 1, t))
            cin = c
    layers += [conv_bn_act(cin, 1280, 1, act=nn.SiLU), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Dropout(0.2), nn.Linear(1280, classes)]
    return nn.Sequential(*layers)
