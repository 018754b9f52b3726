"""The catalog of job types: (family, dataset) -> recipe factory, batch sizes, provenance."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from . import gavel, lucid, multibranch, resnets, sequence, vision
from .recipe import Recipe, image_classification

CIFAR_BATCHES = (32, 128, 512)
IMAGENET_BATCHES = (16, 32, 64)
CIFAR_WD, IMAGENET_WD = 5e-4, 1e-4
LUCID3 = (32, 64, 128)  # Lucid's batch sizes of most models


@dataclass(frozen=True)
class Entry:
    """One (family, dataset): how to build it and at which batch sizes it is a job type."""

    family: str
    dataset: str
    batch_sizes: tuple[int, ...]
    recipe: Callable[[bool], Recipe]   # reduced -> Recipe
    source: str                        # "gavel", "study" or "lucid"
    description: str
    # Lucid's RTX 3090 measurements (coloc.datasets.lucid): the batch sizes it measured (job types even where
    # batch_sizes lacks them; they are not Gavel's), and those it also measured with automatic mixed precision (job type
    # <family>-<dataset>-b<batch>-amp: the same model trained under autocast, see coloc.features)
    lucid_batches: tuple[int, ...] = ()
    amp_batches: tuple[int, ...] = ()

    def all_batches(self) -> tuple[int, ...]:
        """Every batch size that is a job type (without AMP)."""
        return tuple(sorted(set(self.batch_sizes) | set(self.lucid_batches)))


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
              _cifar(partial(resnets.resnet, 18, 10, "cifar")), "gavel", "ResNet-18, CIFAR stem",
              LUCID3, LUCID3),
        Entry("resnet50", "imagenet", (16, 32, 64, 128),
              _imagenet(partial(resnets.resnet, 50, 1000, "imagenet")), "gavel", "ResNet-50 v1.5", LUCID3, LUCID3),
        Entry("transformer", "multi30k", (16, 32, 64, 128, 256), sequence.transformer_recipe, "gavel",
              "Transformer 6+6 layers, d_model 512", (32, 64)),
        # Lucid's LSTM is the same model (PyTorch's word-language-model LSTM, 200 units, 2 layers, BPTT 35)
        Entry("lm", "wikitext2", (5, 10, 20, 40, 80), sequence.lm_recipe, "gavel",
              "2-layer LSTM language model, 200 units", (64, 128), (64, 128)),
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


# Study families Lucid measured on CIFAR-10 too: VGG-11 is pytorch-cifar's VGG11 exactly; coloc's CIFAR MobileNetV2
# has the same widths and strides as pytorch-cifar's but no projection shortcuts (2.24M against 2.30M parameters)
LUCID_CIFAR = {"vgg11", "mobilenetv2"}


def _study_entries() -> list[Entry]:
    entries = []
    for family, builder, desc in VISION_STUDY:
        lucid_batches = LUCID3 if family in LUCID_CIFAR else ()
        entries.append(Entry(family, "cifar10", CIFAR_BATCHES, _cifar(partial(builder, 10, True)),
                             "study", f"{desc}, CIFAR adaptation", lucid_batches, lucid_batches))
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


def _lucid_entries() -> list[Entry]:
    """The job types of Lucid's measurements the other entries lack (architectures: coloc.workloads.lucid)."""
    return [
        Entry("efficientnet", "cifar10", LUCID3, lambda reduced: lucid.cifar_recipe(lucid.cifar_efficientnet),
              "lucid", "EfficientNetB0 as pytorch-cifar writes it (3x3 depthwise only, no 1280 head)",
              LUCID3, LUCID3),
        Entry("mobilenetv3", "imagenet", LUCID3, _imagenet(lucid.mobilenet_v3_small), "lucid",
              "MobileNetV3-Small (torchvision's mobilenet_v3_small)", LUCID3, LUCID3),
        Entry("dcgan", "lsun", LUCID3, lucid.dcgan_recipe, "lucid", "DCGAN 64x64, nz 100, 64 base filters",
              LUCID3, LUCID3),
        Entry("neumf", "movielens", (64, 128), lucid.neumf_recipe, "lucid",
              "NeuMF (GMF + 3-layer MLP, 32 factors) on MovieLens-1M", (64, 128), (64, 128)),
        Entry("ppo", "lunarlander", LUCID3, lucid.ppo_recipe, "lucid",
              "PPO, stable-baselines3 MlpPolicy (64-64 policy and value trunks)", LUCID3),
        Entry("td3", "bipedalwalker", LUCID3, lucid.td3_recipe, "lucid",
              "TD3, stable-baselines3 MlpPolicy (400-300 actor and twin critics, with targets)", LUCID3),
        Entry("pointnet", "shapenet", LUCID3, lucid.pointnet_recipe, "lucid",
              "PointNet classifier with input transform, 2,500 points, 16 classes", LUCID3, LUCID3),
        Entry("bert", "squad", (32,), lucid.bert_squad_recipe, "lucid",
              "BERT-base with a span head, sequences of 384 tokens", (32,), (32,)),
    ]


ENTRIES: dict[tuple[str, str], Entry] = {(e.family, e.dataset): e
                                         for e in _gavel_entries() + _study_entries() + _lucid_entries()}
