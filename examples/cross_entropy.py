"""Cross-entropy loss forward over a large vocabulary (32k-128k classes).

One row per program; the row's logits (bf16 or fp32) are read in blocks of
BLOCK columns while a running maximum `m` and a running sum `d` of exp(x - m)
are kept (online logsumexp: when the maximum grows, the sum is rescaled by
exp(m_old - m_new)).  loss = logsumexp(x) - x[target], in fp32; rows whose
target is IGNORE_INDEX get 0.  Targets are int64 or int32.

    python examples/cross_entropy.py
"""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def cross_entropy_fwd(logits_ptr, targets_ptr, loss_ptr, stride, V,
                      BLOCK: tl.constexpr, IGNORE_INDEX: tl.constexpr = -100):
    row = tl.program_id(0)
    logits_ptr += row.to(tl.int64) * stride
    m = -float("inf")
    d = 0.0
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + cols, mask=cols < V, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(d)
    target = tl.load(targets_ptr + row)
    valid = target != IGNORE_INDEX
    x_t = tl.load(logits_ptr + target, mask=valid, other=0.0).to(tl.float32)
    loss = tl.where(valid, lse - x_t, 0.0)
    tl.store(loss_ptr + row, loss)


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [
    (cross_entropy_fwd, "*bf16,*i64,*fp32,i32:16,i32:16", {"BLOCK": 4096}),
    (cross_entropy_fwd, "*fp32,*i32,*fp32,i32:16,i32", {"BLOCK": 2048}),
]


def reference(logits: np.ndarray, targets: np.ndarray, ignore_index: int = -100) -> np.ndarray:
    x = logits.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]
    valid = targets != ignore_index
    t = np.where(valid, targets, 0)
    return np.where(valid, lse - x[np.arange(len(x)), t], 0.0)


def check(rows: int, vocab: int, logits_dtype: str = "fp32", target_dtype: type = np.int64,
          block: int = 2048) -> None:
    rng = np.random.default_rng(vocab)
    x = (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)
    x[0, :] += 40.0                                     # a row of large logits
    targets = rng.integers(0, vocab, rows).astype(target_dtype)
    if rows > 2:
        targets[2] = -100                               # ignored row
    loss = np.zeros(rows, np.float32)
    if logits_dtype == "bf16":
        import torch
        tx = torch.from_numpy(x).to(torch.bfloat16)
        x = tx.float().numpy()                          # what the kernel sees
        cross_entropy_fwd[(rows,)](tx, targets, loss, vocab, vocab, BLOCK=block)
    else:
        cross_entropy_fwd[(rows,)](x, targets, loss, vocab, vocab, BLOCK=block)
    np.testing.assert_allclose(loss, reference(x, targets), rtol=1e-4, atol=1e-4)


def main(vocabs: tuple[int, ...] = (32_000, 50_257, 128_256)) -> None:
    for v in vocabs:
        check(8, v, "fp32", np.int64, 2048)
        check(8, v, "bf16", np.int64, 2048)
        check(8, v, "fp32", np.int32, 1024)
    print("cross_entropy: ok")


if __name__ == "__main__":
    main()
