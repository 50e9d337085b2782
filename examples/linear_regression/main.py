"""1-D linear regression y = 3x - 2 (+ noise) with SGD; prints the recovered slope and intercept and
plots the loss curve to loss.png when matplotlib is installed."""

from __future__ import annotations

import argparse

import magnetron as mag
from magnetron import nn, optim

TRUE_SLOPE, TRUE_INTERCEPT = 3.0, -2.0


def fit(steps: int = 500, lr: float = 0.1, n: int = 256, seed: int = 0) -> tuple[float, float, list[float]]:
    """Return (slope, intercept, loss history)."""
    mag.context.manual_seed(seed)
    x = mag.Tensor.uniform(n, 1, low=-1.0, high=1.0)
    y = x * TRUE_SLOPE + TRUE_INTERCEPT + mag.Tensor.normal(n, 1, std=0.1)
    model = nn.Linear(1, 1)
    opt = optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.weight.item(), model.bias.item(), losses


def plot(losses: list[float], path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(losses)
    ax.set_xlabel("step")
    ax.set_ylabel("MSE loss")
    ax.set_yscale("log")
    ax.set_title("linear regression with magnetron")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--plot", default="loss.png")
    args = parser.parse_args()
    slope, intercept, losses = fit(args.steps, args.lr)
    print(
        f"slope {slope:.4f} (true {TRUE_SLOPE}), intercept {intercept:.4f} (true {TRUE_INTERCEPT}), "
        f"final loss {losses[-1]:.5f}"
    )
    if plot(losses, args.plot):
        print(f"loss curve written to {args.plot}")


if __name__ == "__main__":
    main()
