#!/usr/bin/env python3
"""Trains the two Fashion-MNIST example models and exports them as ONNX.

The models (cnn.onnx, mlp.onnx) are committed beside this script; this is how they were made.
It needs torch and onnx (the GPU host has both); a CPU is enough, a GPU makes it seconds.

    python3 train.py --data /usr/share/datasets/fashion-mnist --out .

Input of both models: float32 [N, 1, 28, 28], pixels scaled to [0, 1] (what `qforge`'s IDX
reader gives); the normalisation by the training set's mean and deviation is the model's first
two ops, so that users feed raw pixels. Output: logits [N, 10].
"""
import argparse
import json
from pathlib import Path

import torch
from torch import nn

from dataset import load_idx_split

MEAN, STD = 0.2860, 0.3530  # of Fashion-MNIST's training images, pixels in [0, 1]


def load(data_dir, split):
    images, labels = load_idx_split(data_dir, split)
    return torch.from_numpy(images), torch.from_numpy(labels)


class Normalize(nn.Module):
    def forward(self, x):
        return (x - MEAN) / STD


def conv_bn_relu(cin, cout, kernel, groups=1):
    return [
        nn.Conv2d(cin, cout, kernel, padding=kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
    ]


def make_cnn():
    # conv 3x3, depthwise 3x3 + pointwise 1x1 (MobileNet's block), two max-pools, two linears.
    return nn.Sequential(
        Normalize(),
        *conv_bn_relu(1, 16, 3),
        nn.MaxPool2d(2),
        *conv_bn_relu(16, 16, 3, groups=16),
        *conv_bn_relu(16, 32, 1),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


def make_mlp():
    return nn.Sequential(
        Normalize(),
        nn.Flatten(),
        nn.Linear(784, 256),
        nn.ReLU(),
        nn.Linear(256, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


def accuracy(model, x, y, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 1000):
            logits = model(x[i : i + 1000].to(device))
            correct += (logits.argmax(1).cpu() == y[i : i + 1000]).sum().item()
    return correct / len(x)


def train(model, x, y, epochs, device, seed):
    torch.manual_seed(seed)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(x))
        for i in range(0, len(x), 128):
            idx = order[i : i + 128]
            opt.zero_grad()
            loss_fn(model(x[idx].to(device)), y[idx].to(device)).backward()
            opt.step()
        sched.step()
    model.eval()
    return model


def export(model, path):
    model.cpu().eval()
    torch.onnx.export(
        model,
        torch.zeros(1, 1, 28, 28),
        str(path),
        input_names=["image"],
        output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17,
        do_constant_folding=True,
        dynamo=False,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--out", default=str(Path(__file__).parent))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "test")
    summary = {}
    for name, make in (("cnn", make_cnn), ("mlp", make_mlp)):
        torch.manual_seed(args.seed)
        model = train(make(), train_x, train_y, args.epochs, device, args.seed)
        summary[name] = {"test_top1": accuracy(model, test_x, test_y, device),
                         "parameters": sum(p.numel() for p in model.parameters())}
        export(model, Path(args.out) / f"{name}.onnx")
        print(f"{name}: test top-1 {summary[name]['test_top1']:.4f}, "
              f"{summary[name]['parameters']} parameters")
    summary.update(epochs=args.epochs, seed=args.seed, torch=torch.__version__, device=device)
    (Path(args.out) / "training.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
