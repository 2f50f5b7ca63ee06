"""Kernels for the tile-tma-pointers tests (a helper: no RUN lines)."""
import tilec
import tilec.language as tl


@tilec.kernel
def tutorial(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
             stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             BLOCK_K: tl.constexpr, ROW_SUM: tl.constexpr, OTHER: tl.constexpr,
             STORE_ROWS: tl.constexpr, MASK_FORM: tl.constexpr = 0):
    """Triton's tutorial-03 body (rows and columns wrapped by % M / % N, K
    masked, loop-carried pointers), with switches that break one proof each:
    ROW_SUM adds the column sums of the accumulator to every row (A's
    wrapped rows reach live lanes); OTHER != 0 fills A's masked lanes with OTHER; STORE_ROWS = 0
    stores C without its row mask (the wrapped rows of A are stored).
    MASK_FORM writes A's K mask as `<` (0), `<=` (1), `>` (2) or `>=` (3): the
    same bound each time."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if MASK_FORM == 1:
            a_mask = offs_k[None, :] <= K - 1 - k * BLOCK_K
        elif MASK_FORM == 2:
            a_mask = K - k * BLOCK_K > offs_k[None, :]
        elif MASK_FORM == 3:
            a_mask = K - 1 - k * BLOCK_K >= offs_k[None, :]
        else:
            a_mask = offs_k[None, :] < K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=a_mask, other=OTHER)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        if ROW_SUM:
            acc += tl.sum(acc, axis=0)[None, :]
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    if STORE_ROWS:
        tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
    else:
        tl.store(c_ptrs, acc.to(tl.float16), mask=offs_cn[None, :] < N)


@tilec.kernel
def bias_f32(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_bk, stride_cm,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The tutorial's loop (maps: rows and columns wrapped, K masked), then an
    epilogue in f32 before the cast: a scale, a per-column bias and a
    per-row term (the accumulator's rows must be in place when it runs)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :])
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    bias = tl.load(bias_ptr + offs_cn, mask=offs_cn < N, other=0.0)
    out = acc * 0.5 + bias[None, :] + (offs_cm[:, None] % 7).to(tl.float32)
    tl.store(c_ptr + stride_cm * offs_cm[:, None] + offs_cn[None, :], out.to(tl.float16),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@tilec.kernel
def variants(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
             stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             BLOCK_K: tl.constexpr, HINTS: tl.constexpr = 0, CACHE: tl.constexpr = 0,
             ROW_MASK: tl.constexpr = 0):
    """Common variants of the tutorial's source: HINTS wraps the offsets (and
    the row strides) in tl.multiple_of / tl.max_contiguous; CACHE loads and
    stores with cache and eviction keywords; ROW_MASK adds a row conjunct to
    A's mask on top of its `% M` wrap: `offs_am < M` (1), `offs_am <= M - 1`
    (2), `M > offs_am` (3): each always true; `offs_am < N` (4),
    `offs_am < M - 1` (5), `2 offs_am - rows < M` (6: the index polynomials
    read it as `rows < M`, which it is not past M) and `offs_am % N < N` (7:
    a remainder, but not by the wrap's M): not the wrap's bound."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    if HINTS:
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_M), BLOCK_M)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_N), BLOCK_N)
        offs_k = tl.multiple_of(offs_k, BLOCK_K)
        stride_am = tl.multiple_of(stride_am, 16)
        stride_bk = tl.multiple_of(stride_bk, 16)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_mask = offs_k[None, :] < K - k * BLOCK_K
        if ROW_MASK == 1:
            a_mask = (offs_am[:, None] < M) & k_mask
        elif ROW_MASK == 2:
            a_mask = (offs_am[:, None] <= M - 1) & k_mask
        elif ROW_MASK == 3:
            a_mask = k_mask & (M > offs_am[:, None])
        elif ROW_MASK == 4:
            a_mask = (offs_am[:, None] < N) & k_mask
        elif ROW_MASK == 5:
            a_mask = (offs_am[:, None] < M - 1) & k_mask
        elif ROW_MASK == 6:
            rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            a_mask = (2 * offs_am[:, None] - rows[:, None] < M) & k_mask
        elif ROW_MASK == 7:
            a_mask = ((offs_am % N)[:, None] < N) & k_mask
        else:
            a_mask = k_mask
        if CACHE:
            a = tl.load(a_ptrs, mask=a_mask, other=0.0, eviction_policy="evict_last")
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0,
                        cache_modifier=".cg")
        else:
            a = tl.load(a_ptrs, mask=a_mask, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    if CACHE:
        tl.store(c_ptrs, acc.to(tl.float16), mask=c_mask, cache_modifier=".cs",
                 eviction_policy="evict_first")
    else:
        tl.store(c_ptrs, acc.to(tl.float16), mask=c_mask)


@tilec.kernel
def batched(a_ptr, b_ptr, c_ptr, M, N, K, stride_ab, stride_am, stride_ak, stride_bb, stride_bk,
            stride_bn, stride_cb, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
            BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, A_BATCH: tl.constexpr = 0,
            NB=0, BATCH_MASK: tl.constexpr = 0):
    """A batched tutorial-03 body: program (m, n, b) multiplies the [M, K] and
    [K, N] matrices of batch b (rows and columns wrapped by % M / % N, K
    masked, loop-carried pointers), each operand's batch at `pid_b * stride_xb`.
    A_BATCH moves A's batch offset: `pid_b * stride_am` (1: the row stride),
    `pid_b * 64` (2: a constant, not a stride argument), `pid_b * M *
    stride_am` (3: rows of a flattened [B M, K] tensor), `(pid_b + 1) *
    stride_ab` (4: the next batch; a map's batch coordinate pid_b + 1) or
    `pid_b * stride_ab` advanced by one batch per K step (5: a loop-varying
    batch coordinate pid_b + k).  BATCH_MASK adds `pid_b < NB` to every
    mask (1), or `pid_b < NB - 1` (2)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_b = tl.program_id(2)
    live_b = pid_b < NB - (BATCH_MASK - 1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    if A_BATCH == 1:
        a_batch = pid_b * stride_am
    elif A_BATCH == 2:
        a_batch = pid_b * 64
    elif A_BATCH == 3:
        a_batch = pid_b * M * stride_am
    elif A_BATCH == 4:
        a_batch = (pid_b + 1) * stride_ab
    else:
        a_batch = pid_b * stride_ab
    a_ptrs = a_ptr + a_batch + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + pid_b * stride_bb + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a_mask = offs_k[None, :] < K - k * BLOCK_K
        b_mask = offs_k[:, None] < K - k * BLOCK_K
        if BATCH_MASK:
            a_mask = a_mask & live_b
            b_mask = b_mask & live_b
        a = tl.load(a_ptrs, mask=a_mask, other=0.0)
        b = tl.load(b_ptrs, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        if A_BATCH == 5:
            a_ptrs += stride_ab
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + pid_b * stride_cb + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    if BATCH_MASK:
        c_mask = c_mask & live_b
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@tilec.kernel
def batched_persistent(a_ptr, b_ptr, c_ptr, M, N, K, NB, stride_ab, stride_am, stride_bb,
                       stride_bk, stride_cb, stride_cm, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr):
    """`batched` as a persistent loop over every batch's tiles (the batch
    index a quotient of the tile id, not a program id), hinted `flatten=True`
    (its K bound is computed in the loop and it carries pointers: the nest
    stays, tile-flatten-loops)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    per_batch = num_pid_m * num_pid_n
    for tile_id in tl.range(tl.program_id(0), per_batch * NB, NUM_SMS, flatten=True):
        pid_b = tile_id // per_batch
        pid_m = (tile_id % per_batch) // num_pid_n
        pid_n = (tile_id % per_batch) % num_pid_n
        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + pid_b * stride_ab + offs_am[:, None] * stride_am + offs_k[None, :]
        b_ptrs = b_ptr + pid_b * stride_bb + offs_k[:, None] * stride_bk + offs_bn[None, :]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K * stride_bk
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + pid_b * stride_cb + stride_cm * offs_cm[:, None] + offs_cn[None, :]
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
                 mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@tilec.kernel
def heads(q_ptr, k_ptr, o_ptr, M, N, D, H, X, sqz, sqh, sqx, sqm, skz, skh, skx, skn, soz, soh,
          sox, som, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
          EXTRA: tl.constexpr = 0):
    """Scores Q K^T per (batch, head) as an attention kernel written with
    pointers addresses them: program (m, n, zh) multiplies the [M, D] block
    of Q and the [N, D] block of K (read K-major, as [D, N]) of batch z =
    zh // H, head h = zh % H, each at `z * s_z + h * s_h`; rows, columns
    and D masked; O [M, N] stored masked.  EXTRA adds a third batch index x
    (zh = (z H + h) X + x) at `x * s_x`."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_zh = tl.program_id(2)
    if EXTRA:
        off_x = pid_zh % X
        pid_zh = pid_zh // X
    off_z = pid_zh // H
    off_h = pid_zh % H
    q_off = off_z * sqz + off_h * sqh
    k_off = off_z * skz + off_h * skh
    o_off = off_z * soz + off_h * soh
    if EXTRA:
        q_off += off_x * sqx
        k_off += off_x * skx
        o_off += off_x * sox
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    q_ptrs = q_ptr + q_off + offs_m[:, None] * sqm + offs_d[None, :]
    k_ptrs = k_ptr + k_off + offs_d[:, None] + offs_n[None, :] * skn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for d in range(0, tl.cdiv(D, BLOCK_D)):
        q = tl.load(q_ptrs, mask=(offs_m[:, None] < M) & (offs_d[None, :] < D - d * BLOCK_D),
                    other=0.0)
        k = tl.load(k_ptrs, mask=(offs_d[:, None] < D - d * BLOCK_D) & (offs_n[None, :] < N),
                    other=0.0)
        acc = tl.dot(q, k, acc)
        q_ptrs += BLOCK_D
        k_ptrs += BLOCK_D
    o_ptrs = o_ptr + o_off + offs_m[:, None] * som + offs_n[None, :]
    tl.store(o_ptrs, acc.to(o_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@tilec.kernel
def persistent_tutorial(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                        stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                        BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                        GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr,
                        HINTS: tl.constexpr = 1):
    """Triton's persistent-matmul tutorial (09) kernel as written there: rows
    and columns past M and N clamped to 0 by `tl.where` and declared
    contiguous multiples of the block (`tl.max_contiguous(tl.multiple_of(...))`,
    true where N is a multiple of 16), pointers recomputed each K step, the
    tile loop flattened.  HINTS=0 drops the two hint lines."""
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + (tile_id % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        start_m = pid_m * BLOCK_SIZE_M
        start_n = pid_n * BLOCK_SIZE_N
        offs_am = start_m + tl.arange(0, BLOCK_SIZE_M)
        offs_bn = start_n + tl.arange(0, BLOCK_SIZE_N)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        if HINTS:
            offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
            offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
            a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, accumulator.to(tl.float16), mask=c_mask)

