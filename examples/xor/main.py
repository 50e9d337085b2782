"""XOR with a 2-2-1 MLP: tanh, MSE, SGD (lr 0.1), 2000 epochs — the README's quick start."""

from __future__ import annotations

import argparse

import magnetron as mag
from magnetron import nn, optim

INPUTS = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
TARGETS = [[0.0], [1.0], [1.0], [0.0]]


def train(epochs: int = 2000, lr: float = 0.1, seed: int = 0, verbose: bool = True) -> list[float]:
    """Train the network and return its predictions for the four inputs."""
    mag.context.manual_seed(seed)
    model = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 1), nn.Tanh())
    opt = optim.SGD(model.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    x, y = mag.Tensor(INPUTS), mag.Tensor(TARGETS)
    for epoch in range(epochs):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if verbose and (epoch % 250 == 0 or epoch == epochs - 1):
            print(f"epoch {epoch:5d}  loss {loss.item():.6f}")
    with mag.no_grad():
        return [row[0] for row in model(x).tolist()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    preds = train(args.epochs, args.lr, args.seed)
    for inp, target, p in zip(INPUTS, TARGETS, preds):
        print(f"{inp} -> {p:.4f} (target {target[0]:.0f})")


if __name__ == "__main__":
    main()
