"""Kernels for the tile-tma-descriptors tests (a helper: no RUN lines)."""
import tilec
import tilec.language as tl


@tilec.kernel
def batched_desc(a_ptr, b_ptr, c_ptr, M, N, K, stride_ab, stride_am, stride_bb, stride_bk,
                 stride_cb, stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, BASE: tl.constexpr = 0):
    """A batched matmul written with per-program descriptors: program
    (m, n, b) multiplies batch b's [M, K] and [K, N] matrices, each through a
    descriptor whose base is `x_ptr + pid_b * stride_xb`.  BASE changes A's
    base offset: `pid_b * M * stride_am` (1: rows of a flattened [B M, K]
    tensor, one group of two arguments), `pid_b * 64 * stride_am` (2: a
    constant factor, kept in the stride), `(pid_b + 1) * stride_ab` (3: the
    next batch, coordinate pid_b + 1), `pid_b * 24` (4: a
    constant stride, 48 bytes: a multiple of 16), `pid_b * 20` (5: 40 bytes,
    not a multiple of 16)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_b = tl.program_id(2)
    if BASE == 1:
        a_base = a_ptr + pid_b * M * stride_am
    elif BASE == 2:
        a_base = a_ptr + pid_b * 64 * stride_am
    elif BASE == 3:
        a_base = a_ptr + (pid_b + 1) * stride_ab
    elif BASE == 4:
        a_base = a_ptr + pid_b * 24
    elif BASE == 5:
        a_base = a_ptr + pid_b * 20
    else:
        a_base = a_ptr + pid_b * stride_ab
    a_d = tl.make_tensor_descriptor(a_base, shape=[M, K], strides=[stride_am, 1],
                                    block_shape=[BLOCK_M, BLOCK_K])
    b_d = tl.make_tensor_descriptor(b_ptr + pid_b * stride_bb, shape=[K, N],
                                    strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_d = tl.make_tensor_descriptor(c_ptr + pid_b * stride_cb, shape=[M, N],
                                    strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_d.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_d.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_d.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


@tilec.kernel
def heads_desc(q_ptr, k_ptr, o_ptr, M, N, D, H, X, sqz, sqh, sqx, sqm, skz, skh, skx, skn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
               EXTRA: tl.constexpr = 0):
    """Scores Q K^T per (batch, head) through per-head descriptors, as
    attention kernels write them: program (m, n, zh) reads Q [M, D] at
    `q_ptr + z * s_qz + h * s_qh` (z = zh // H, h = zh % H) and K [N, D] at
    `k_ptr + z * s_kz + h * s_kh` (its blocks transposed for the product),
    BLOCK_D columns per step, and stores O [M, N] at `o_ptr + zh * M * N`
    (contiguous per head).  EXTRA adds a third batch index x
    (zh = (z H + h) X + x) at `x * s_x`."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_zh = tl.program_id(2)
    o_base = o_ptr + pid_zh.to(tl.int64) * M * N
    if EXTRA:
        off_x = pid_zh % X
        pid_zh = pid_zh // X
    off_z = pid_zh // H
    off_h = pid_zh % H
    q_off = off_z * sqz + off_h * sqh
    k_off = off_z * skz + off_h * skh
    if EXTRA:
        q_off += off_x * sqx
        k_off += off_x * skx
    q_d = tl.make_tensor_descriptor(q_ptr + q_off, shape=[M, D], strides=[sqm, 1],
                                    block_shape=[BLOCK_M, BLOCK_D])
    k_d = tl.make_tensor_descriptor(k_ptr + k_off, shape=[N, D], strides=[skn, 1],
                                    block_shape=[BLOCK_N, BLOCK_D])
    o_d = tl.make_tensor_descriptor(o_base, shape=[M, N], strides=[N, 1],
                                    block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for d in range(0, tl.cdiv(D, BLOCK_D)):
        q = q_d.load([pid_m * BLOCK_M, d * BLOCK_D])
        k = k_d.load([pid_n * BLOCK_N, d * BLOCK_D])
        acc = tl.dot(q, k.T, acc)
    o_d.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(o_ptr.dtype.element_ty))


@tilec.kernel
def reversed_copy(x_ptr, y_ptr, M, N, NB, stride_xb, stride_xm, stride_yb, stride_ym,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, FORM: tl.constexpr = 0):
    """Y's batch b is X's batch NB - 1 - b, through per-batch descriptors.
    X's base `(NB - 1 - pid_b) * stride_xb` lies inside X on every program,
    but its terms split as 1 * (NB stride_xb) + (-1 - pid_b) * stride_xb: a
    batch coordinate below zero, so X must stay a pointer access.  FORM 1
    writes X's base `pid_b * 2 * stride_xb - pid_b * stride_xb` (one group,
    coordinate pid_b: a map)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_b = tl.program_id(2)
    if FORM == 1:
        x_base = x_ptr + pid_b * 2 * stride_xb - pid_b * stride_xb
    else:
        x_base = x_ptr + (NB - 1 - pid_b) * stride_xb
    x_d = tl.make_tensor_descriptor(x_base, shape=[M, N], strides=[stride_xm, 1],
                                    block_shape=[BLOCK_M, BLOCK_N])
    y_d = tl.make_tensor_descriptor(y_ptr + pid_b * stride_yb, shape=[M, N],
                                    strides=[stride_ym, 1], block_shape=[BLOCK_M, BLOCK_N])
    y_d.store([pid_m * BLOCK_M, pid_n * BLOCK_N], x_d.load([pid_m * BLOCK_M, pid_n * BLOCK_N]))
