"""Train a tiny Keras ranking model and watch keras-rs's NDCG next to tierank's exact one, epoch by epoch.

The model scores every item with one dense layer whose output is rounded to a multiple of 0.25 (a
straight-through estimator keeps the gradient), and its weights start at zero: in the first epochs most
scores tie, as with quantised or integer-valued scores. keras-rs breaks ties by a random shuffle, so its
NDCG on the same validation data moves from one evaluation to the next; tierank.keras.NDCG is the exact
mean over all orderings of the tied items (the same every time), with the exact bounds beside it.

    python examples/keras_ranking.py            # any Keras backend: KERAS_BACKEND=jax|torch|tensorflow

Runs in well under a minute on a CPU.
"""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore", category=DeprecationWarning)

import numpy as np  # noqa: E402

import keras  # noqa: E402
import keras_rs  # noqa: E402
from keras import ops  # noqa: E402

import tierank.keras  # noqa: E402

QUERIES, ITEMS, FEATURES, K, EPOCHS = 512, 10, 8, 5, 6


class RoundScores(keras.layers.Layer):
    """Scores rounded to multiples of 0.25 in the forward pass; the identity for the gradient."""

    def call(self, x):
        return x + ops.stop_gradient(ops.round(x * 4.0) / 4.0 - x)


def make_data(seed: int = 0):
    """Items with random features; graded relevance 0..3 from a hidden linear score plus noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(QUERIES, ITEMS, FEATURES)).astype("float32")
    hidden = x @ rng.normal(size=FEATURES) + 0.5 * rng.normal(size=(QUERIES, ITEMS))
    y = np.digitize(hidden, np.quantile(hidden, [0.5, 0.8, 0.95])).astype("float32")
    return x, y


def main() -> None:
    keras.utils.set_random_seed(0)
    x, y = make_data()
    split = QUERIES * 3 // 4
    model = keras.Sequential([
        keras.Input((ITEMS, FEATURES)),
        keras.layers.Dense(1, kernel_initializer=keras.initializers.RandomNormal(stddev=0.05)),   # ~0: ties
        keras.layers.Reshape((ITEMS,)),
        RoundScores(),
    ])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=keras_rs.losses.PairwiseLogisticLoss(),
                  metrics=[keras_rs.metrics.NDCG(k=K, name="kerasrs_ndcg"),
                           tierank.keras.NDCG(k=K, name="tierank_ndcg"),
                           tierank.keras.NDCG(k=K, ties="lower", name="tierank_low"),
                           tierank.keras.NDCG(k=K, ties="upper", name="tierank_high")])
    print(f"backend {keras.backend.backend()}; NDCG@{K} on the validation lists after each epoch")
    print("epoch | tied items  | keras-rs NDCG (shuffled ties) | tierank NDCG (exact) | tierank bounds")
    for epoch in range(EPOCHS + 1):
        if epoch:
            model.fit(x[:split], y[:split], batch_size=32, epochs=1, verbose=0)
        scores = np.asarray(model.predict(x[split:], verbose=0))
        same = (scores[:, :, None] == scores[:, None, :]).sum(axis=2) > 1   # items tied with another one
        tied = same.mean()
        res = model.evaluate(x[split:], y[split:], batch_size=len(x) - split, verbose=0, return_dict=True)
        again = model.evaluate(x[split:], y[split:], batch_size=len(x) - split, verbose=0, return_dict=True)
        print(f"{epoch:5d} | {tied:11.0%} | {res['kerasrs_ndcg']:.4f}, again {again['kerasrs_ndcg']:.4f}"
              f"{'':5s} | {res['tierank_ndcg']:.4f}, again {again['tierank_ndcg']:.4f} | "
              f"[{res['tierank_low']:.4f}, {res['tierank_high']:.4f}]")


if __name__ == "__main__":
    main()
