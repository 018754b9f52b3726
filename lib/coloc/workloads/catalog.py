"""The catalog of job types: (family, dataset) -> recipe factory, batch sizes, provenance."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from . import gavel, multibranch, resnets, sequence, vision
from .recipe import Recipe, image_classification

CIFAR_BATCHES = (32, 128, 512)
IMAGENET_BATCHES = (16, 32, 64)
CIFAR_WD, IMAGENET_WD = 5e-4, 1e-4


@dataclass(frozen=True)
class Entry:
    """One (family, dataset): how to build it and at which batch sizes it is a job type."""

    family: str
    dataset: str
    batch_sizes: tuple[int, ...]
    recipe: Callable[[bool], Recipe]   # reduced -> Recipe
    source: str                        # "gavel" or "study"
    description: str


def _cifar(model: Callable[[], object]) -> Callable[[bool], Recipe]:
    """CIFAR-10 classification at 32x32 (already small: `reduced` keeps the size)."""
    return lambda reduced: image_classification(model, 32, 10, CIFAR_WD)


def _imagenet(model: Callable[[], object], size: int = 224, reduced_size: int = 64):
    """ImageNet classification at `size` (reduced: `reduced_size`, for unit tests only)."""
    return lambda reduced: image_classification(model, reduced_size if reduced else size, 1000,
                                                IMAGENET_WD)


def _gavel_entries() -> list[Entry]:
    return [
        Entry("resnet18", "cifar10", (16, 32, 64, 128, 256),
              _cifar(partial(resnets.resnet, 18, 10, "cifar")), "gavel", "ResNet-18, CIFAR stem"),
        Entry("resnet50", "imagenet", (16, 32, 64, 128),
              _imagenet(partial(resnets.resnet, 50, 1000, "imagenet")), "gavel", "ResNet-50 v1.5"),
        Entry("transformer", "multi30k", (16, 32, 64, 128, 256), sequence.transformer_recipe, "gavel",
              "Transformer 6+6 layers, d_model 512"),
        Entry("lm", "wikitext2", (5, 10, 20, 40, 80), sequence.lm_recipe, "gavel",
              "2-layer LSTM language model, 200 units"),
        Entry("recommendation", "ml20m", (512, 1024, 2048, 4096, 8192), gavel.recommendation_recipe,
              "gavel", "denoising autoencoder over 20,108 items"),
        Entry("a3c", "pong", (4,), gavel.a3c_recipe, "gavel", "A3C actor-critic, 4 workers"),
        Entry("cyclegan", "monet2photo", (1,), gavel.cyclegan_recipe, "gavel",
              "CycleGAN, 9-block ResNet generators, PatchGAN discriminators"),
    ]


VISION_STUDY = [  # family, builder(classes, small), description
    ("vgg11", partial(vision.vgg, 11), "VGG-11"),
    ("vgg16", partial(vision.vgg, 16), "VGG-16"),
    ("vgg19", partial(vision.vgg, 19), "VGG-19"),
    ("mobilenetv2", vision.mobilenet_v2, "MobileNetV2 1.0"),
    ("squeezenet", vision.squeezenet, "SqueezeNet 1.0"),
    ("shufflenetv2", vision.shufflenet_v2, "ShuffleNetV2 1.0x"),
    ("efficientnetb0", vision.efficientnet_b0, "EfficientNet-B0"),
    ("densenet121", multibranch.densenet121, "DenseNet-121"),
    ("googlenet", multibranch.googlenet, "GoogLeNet with batch norm"),
]


def _study_entries() -> list[Entry]:
    entries = []
    for family, builder, desc in VISION_STUDY:
        entries.append(Entry(family, "cifar10", CIFAR_BATCHES, _cifar(partial(builder, 10, True)),
                             "study", f"{desc}, CIFAR adaptation"))
        entries.append(Entry(family, "imagenet", IMAGENET_BATCHES,
                             _imagenet(partial(builder, 1000, False)), "study", desc))
    entries += [
        Entry("inceptionv3", "imagenet", IMAGENET_BATCHES,
              _imagenet(partial(multibranch.inception_v3, 1000), 299, 80), "study",
              "Inception-v3 at 299x299, no auxiliary head"),
        Entry("wideresnet", "cifar10", CIFAR_BATCHES, _cifar(partial(resnets.wide_resnet, 10)),
              "study", "WRN-28-10"),
        Entry("resnext29", "cifar10", CIFAR_BATCHES, _cifar(partial(resnets.resnext29, 10)),
              "study", "ResNeXt-29 2x64d"),
        Entry("gnmt", "wmt16", (32, 64, 128), sequence.gnmt_recipe, "study",
              "GNMT-style 4+4-layer LSTM translator with attention, hidden 1024"),
        Entry("bert", "wikipedia", (8, 16, 32), sequence.bert_recipe, "study",
              "BERT-base pre-training, sequence length 128"),
        Entry("gru", "sst2", (32, 64, 128), sequence.gru_recipe, "study",
              "bidirectional GRU sentiment classifier, 256 units"),
    ]
    return entries


ENTRIES: dict[tuple[str, str], Entry] = {(e.family, e.dataset): e
                                         for e in _gavel_entries() + _study_entries()}
