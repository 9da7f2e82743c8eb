/* The blocked GEMM driver for one packed representation, included once per kind by gemm.c with
 *   KT        the compute type (float or double): W, alpha, beta, the epilogue
 *   PT        the packed type (KT, or uint16_t: bf16 bits for the pair dot product)
 *   KP        steps of k per packed group (1; 2 for VDPBF16PS pairs)
 *   KN(name)  name with the kind's suffix
 *   KLINE     the run converter into PT (gck_kline_to_f32, gck_kline_to_f64, kline_bits16)
 *   KIN, KOUT the run converters of the epilogue (C into KT, KT into D)
 *   KUK(ops, kb, a, b, w, ldw, first)  the micro-kernel call for kb steps (a multiple of KP)
 *   KMR, KNR  the path ops' tile members
 *   KSAME(t)  whether values of type t are stored as PT holds them (copied, not converted)
 *   KSK, KSKT the path ops' member for the kernels on unpacked operands and their type (used
 *             only when KP is 1 and KNOSUP is not defined)
 * and undefines them at its end.
 *
 * Loop order (GotoBLAS/BLIS), the accumulator block W holding R rows of an NC panel, so that
 * every element keeps one accumulator from k = 0 to K-1:
 *   for each panel of NC columns:
 *     for each chunk of R rows (W within bk.w_bytes: all rows of a job but for very large ones):
 *       for each block of KC steps:   pack op(B) into NR-wide slivers
 *         for each block of MC rows:  pack op(A) into MR-tall slivers; micro-kernels into W
 *       epilogue: D = alpha*W + beta*C for the chunk, in the compute type, rounded to D
 * A sliver holds, for each group g of KP steps, MR rows of KP values: element (r, k) at
 * (k/KP)*MR*KP + r*KP + k%KP. Slivers are padded with zeros to whole tiles and whole groups and
 * W has whole tiles, so the micro-kernels never see an edge: nothing outside the operands is read
 * or written. For the AMX kernel (ops->bf16tile) k is padded to whole tile steps of 32 and op(B)
 * is packed a column at a time (slivers one wide: column x at x*kbp), the columns of the last
 * tile past the panel zeroed (internal: private to kernels/). */

/* One sliver of an operand stored along k (unit stride in k): chunks of up to PACK_CHUNK steps
 * of each of its `rows` stored runs converted into buf, then written across, step by step, in
 * the sliver's order: the reads are sequential and the sliver is written once, in order (written
 * a run at a time, at a stride of the sliver's width, it left L1 for every run). */
static void KN(pack_across)(PT *dst, int len, const kpanel *p, const char *base, int64_t rows,
                            int64_t kb) {
#if KP == 2
    if (KSAME(p->t)) {  /* a group is two adjacent stored values: moved as one 32-bit unit */
        if (len == 1) { /* a column of the AMX kernel's op(B): its run as it is stored */
            memcpy(dst, base, (size_t)kb * sizeof(PT));
            return;
        }
        for (int64_t r = 0; r < rows; r++) {
            const PT *src = (const PT *)base + r * p->xs;
            PT *out = dst + r * KP;
            int64_t g = 0;
            for (; g < kb / KP; g++) memcpy(out + g * len * KP, src + g * KP, KP * sizeof(PT));
            if (kb % KP) out[g * len * KP] = src[g * KP]; /* the other half: zeroed by pack */
        }
        return;
    }
#endif
    PT buf[PACK_MAX_LEN * PACK_CHUNK];
    for (int64_t k0 = 0; k0 < kb; k0 += PACK_CHUNK) {
        int64_t kk = kb - k0 < PACK_CHUNK ? kb - k0 : PACK_CHUNK;
        for (int64_t r = 0; r < rows; r++)
            KLINE(buf + r * PACK_CHUNK, 1, base + (r * p->xs + k0) * p->es, p->t, 1, kk, p->f16c);
        for (int64_t k = 0; k < kk; k++) {
            PT *out = dst + (k0 + k) / KP * len * KP + (k0 + k) % KP;
            for (int64_t r = 0; r < rows; r++) out[r * KP] = buf[r * PACK_CHUNK + k];
        }
    }
}

/* Slivers of op(X)(x, k) for x in x0..x0+xn and k in k0..k0+kb, len-wide, zero-padded to kbp
 * steps (whole groups, or whole AMX steps); each run of stored values is converted along the
 * operand's unit stride when it has one. */
static void KN(pack)(PT *dst, int len, const kpanel *p, int64_t x0, int64_t xn, int64_t k0,
                     int64_t kb, int64_t kbp) {
    bool pairs = false; /* bf16 pairs moved as they are stored */
#if KP == 2
    pairs = p->xs == 1 && KSAME(p->t);
    if (pairs) { /* two stored columns at a time, interleaved into groups */
        for (int64_t k = 0; k < kb; k += KP) {
            const PT *c0 = (const PT *)p->base + x0 + (k0 + k) * p->ks,
                     *c1 = k + 1 < kb ? c0 + p->ks : NULL;
            for (int64_t s = 0; s < xn; s += len) {
                PT *out = dst + s * kbp + k / KP * len * KP;
                int64_t n = xn - s < len ? xn - s : len;
                if (c1)
                    for (int64_t x = 0; x < n; x++)
                        out[x * KP] = c0[s + x], out[x * KP + 1] = c1[s + x];
                else /* the last group's other half: zeroed below */
                    for (int64_t x = 0; x < n; x++) out[x * KP] = c0[s + x];
            }
        }
    }
#endif
    if (p->xs == 1 && !pairs) /* along each stored column once, sliver after sliver */
        for (int64_t k = 0; k < kb; k++) {
            const char *col = p->base + (x0 + (k0 + k) * p->ks) * p->es;
            if (k + PACK_PF < kb) /* each column a page or more apart: no stream to follow */
                for (int64_t o = 0; o < xn * p->es; o += 64)
                    __builtin_prefetch(col + PACK_PF * p->ks * p->es + o, 0, 3);
            for (int64_t s = 0; s < xn; s += len) {
                PT *out = dst + s * kbp + k / KP * len * KP + k % KP;
                int64_t n = xn - s < len ? xn - s : len;
                if (KSAME(p->t)) /* stored as packed: copied inline (a call per run cost more) */
                    for (int64_t x = 0; x < n; x++) out[x * KP] = ((const PT *)col)[s + x];
                else
                    KLINE(out, KP, col + s * p->es, p->t, 1, n, p->f16c);
            }
        }
    for (int64_t s = 0; s < xn; s += len, dst += len * kbp) {
        int64_t rows = xn - s < len ? xn - s : len;
        const char *base = p->base + ((x0 + s) * p->xs + k0 * p->ks) * p->es;
        if (p->xs != 1 && p->ks == 1 && len <= PACK_MAX_LEN)
            KN(pack_across)(dst, len, p, base, rows, kb);
        else if (p->xs != 1)
            for (int64_t r = 0; r < rows; r++)
                for (int64_t u = 0; u < KP && u < kb; u++)
                    KLINE(dst + r * KP + u, (int64_t)len * KP,
                          base + (r * p->xs + u * p->ks) * p->es, p->t, KP * p->ks,
                          (kb - u + KP - 1) / KP, p->f16c);
        for (int64_t g = 0; g < kbp / KP; g++) { /* rows past the edge; the last group's tail */
            PT *grp = dst + g * len * KP;
            for (int64_t x = rows * KP; x < (int64_t)len * KP; x++) grp[x] = 0;
            if (g * KP + KP > kb)
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t u = kb > g * KP ? kb - g * KP : 0; u < KP; u++)
                        grp[r * KP + u] = 0;
        }
    }
}

/* One column of the epilogue's elements: h values of W's column wq (NULL where A and B are not
 * read) into t, `ts` apart, t holding C's values where C is read (rc): alpha*w + beta*c (not
 * fused), alpha*w, beta*c or 0; where alpha is 1 and C is not read, w itself (1 * w is w, bit for
 * bit). */
static inline void KN(combine)(KT *t, int64_t ts, const KT *wq, int64_t h, bool rc, KT alpha,
                               KT beta) {
    if (wq && rc)
        for (int64_t r = 0; r < h; r++) {
            KT p = alpha * wq[r];
            t[r * ts] = p + beta * t[r * ts];
        }
    else if (wq && alpha == 1)
        for (int64_t r = 0; r < h; r++) t[r * ts] = wq[r];
    else if (wq)
        for (int64_t r = 0; r < h; r++) t[r * ts] = alpha * wq[r];
    else if (rc)
        for (int64_t r = 0; r < h; r++) t[r * ts] = beta * t[r * ts];
    else
        for (int64_t r = 0; r < h; r++) t[r * ts] = 0;
}

/* The epilogue's elements (below) where D's rows are contiguous, in blocks of up to EPI_ROWS x
 * EPI_COLS elements through tmp (element (r, q) of a block at tmp[r * g + q]): each row's values
 * of C read and of D written along the row. */
static void KN(epilogue_by_rows)(const kjob *j, const KT *w, int64_t ldw, const void *C, void *D,
                                 int64_t i0, int64_t mb, int64_t j0, int64_t nb, KT *tmp) {
    const gck_case *c = j->c;
    KT alpha = (KT)c->alpha, beta = (KT)c->beta;
    gck_format td = gck_case_type(c, GCK_D);
    int64_t esc = gck_format_get(c->type_c)->storage_bytes, esd = gck_format_get(td)->storage_bytes;
    for (int64_t q0 = 0; q0 < nb; q0 += EPI_COLS)
        for (int64_t r0 = 0; r0 < mb; r0 += EPI_ROWS) {
            int64_t g = nb - q0 < EPI_COLS ? nb - q0 : EPI_COLS,
                    h = mb - r0 < EPI_ROWS ? mb - r0 : EPI_ROWS;
            if (C)
                for (int64_t r = 0; r < h; r++)
                    KIN(tmp + r * g, 1,
                        (const char *)C + ((i0 + r0 + r) * j->crs + (j0 + q0) * j->ccs) * esc,
                        c->type_c, j->ccs, g, false);
            for (int64_t q = 0; q < g; q++) {
                const KT *wq = w ? w + (q0 + q) * ldw + r0 : NULL;
                KN(combine)(tmp + q, g, wq, h, C != NULL, alpha, beta);
            }
            for (int64_t r = 0; r < h; r++)
                KOUT((char *)D + ((i0 + r0 + r) * j->drs + (j0 + q0) * j->dcs) * esd, td, j->dcs,
                     tmp + r * g, g, j->ops->f16c);
        }
}

/* D = alpha*W + beta*C over rows i0..i0+mb, columns j0..j0+nb (W: that block, leading
 * dimension ldw; NULL when A and B are not read), a column at a time through tmp (mb values),
 * each element as combine says. Where D's rows are contiguous (a product computed transposed) and
 * the lines of a column's values, a leading dimension apart, would crowd an L1 set
 * (lines_crowd_a_set), by rows instead (epilogue_by_rows): written a column at a time into a D
 * stored by rows with a leading dimension of a power of two, each value went to a line of its own
 * in the same few sets, evicted before the next column's value came, and f32 512 x 128 x 128 spent
 * 72% of its time there (53 GFLOP/s on a Zen 5 thread). */
static void KN(epilogue)(const kjob *j, const gck_blocking *bk, const KT *w, int64_t ldw,
                         const void *C, void *D, int64_t i0, int64_t mb, int64_t j0, int64_t nb,
                         KT *tmp) {
    const gck_case *c = j->c;
    KT alpha = (KT)c->alpha, beta = (KT)c->beta;
    bool rc = C != NULL;
    gck_format td = gck_case_type(c, GCK_D);
    int64_t esc = gck_format_get(c->type_c)->storage_bytes, esd = gck_format_get(td)->storage_bytes;
    if (j->drs != 1 && lines_crowd_a_set(mb, j->drs * esd, bk)) {
        atomic_fetch_add(&rows_epilogues, 1);
        KN(epilogue_by_rows)(j, w, ldw, C, D, i0, mb, j0, nb, tmp);
        return;
    }
    for (int64_t q = 0; q < nb; q++) {
        int64_t col = j0 + q;
        const KT *wq = w ? w + q * ldw : NULL, *out = tmp;
        if (rc)
            KIN(tmp, 1, (const char *)C + (i0 * j->crs + col * j->ccs) * esc, c->type_c, j->crs, mb,
                false);
        if (wq && !rc && alpha == 1) /* W goes out as it is, without the copy */
            out = wq;
        else
            KN(combine)(tmp, 1, wq, mb, rc, alpha, beta);
        KOUT((char *)D + (i0 * j->drs + col * j->dcs) * esd, td, j->drs, out, mb, j->ops->f16c);
    }
}

/* One job's block of one batch member: rows i0..i1, columns j0..j1. */
static bool KN(block)(const kjob *j, const void *A, const void *B, const void *C, void *D,
                      int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const gck_case *c = j->c;
    const gck_kpath_ops *ops = j->ops;
    int mr = ops->KMR, nr = ops->KNR;
#if KP == 1 && !defined(KNOSUP)
    /* operands read where they are stored (sup_reads); the tile is then the path's shape that
     * fits the job best */
    int sup = sup_reads(c, ops, j->ars, i1 - i0, j1 - j0);
    bool ua = sup & SUP_A, ub = sup & SUP_B;
    KSKT sk = NULL;
    bool lanes = false;
    if (sup) {
        atomic_fetch_add(&sup_jobs, 1);
        double work;
        int s = sup_shape(ops, sizeof(KT) == 4, i1 - i0, j1 - j0, c->k, sup, j->brs, &work);
        mr = ops->KSK[s].mr, nr = ops->KSK[s].nr, sk = ops->KSK[s].fn;
        if ((lanes = ops->KSK[s].lanes)) atomic_fetch_add(&lane_jobs, 1);
        atomic_fetch_add(&shape_jobs[sizeof(KT) == 4][s], 1);
    }
#else
    bool ub = false, ua = false;
#endif
    gck_blocking bk = gck_kernels_blocking((int)sizeof(KT), mr, nr);
    /* steps per packed unit: a group, or an AMX tile step, whose kernel takes op(B) a column at
     * a time (blen) */
    int64_t kal = KP, blen = nr;
#if KP == 2
    if (ops->bf16tile) kal = GCK_AMX_KSTEP, blen = 1;
#endif
    /* blocks no larger than the job's share (whole tiles), so that small products allocate and
     * touch small buffers */
    int64_t mc = bk.mc, kc = bk.kc / kal * kal, kp = (c->k + kal - 1) / kal * kal;
    if (kc < kal) kc = kal;
    int64_t rows = (i1 - i0 + mr - 1) / mr * mr, cols = (j1 - j0 + nr - 1) / nr * nr;
    int64_t nc = bk.nc_max > cols ? cols : bk.nc_max; /* both whole tiles */
    /* as few panels as nc_max allows, of even widths: a job of 1024 columns at NC 1020 would
     * otherwise pack all of op(A) again for a panel of 4 */
    int64_t panels = (cols + nc - 1) / nc;
    nc = (cols / nr + panels - 1) / panels * nr;
    /* op(A) read in place is streamed down its columns: every row of the job in one block (as
     * many as W holds); each tile requests the tile two below it, step by step, and a block has
     * as many steps as keep those requests within half of L1 */
#if KP == 1 && !defined(KNOSUP)
    int64_t pf = 0;
    if (ua) {
        mc = bk.w_bytes / ((int64_t)sizeof(KT) * nc) / mr * mr;
        if (mc < mr) mc = mr;
        pf = 2 * mr * (int64_t)sizeof(KT);
        kc = clamp_to(bk.l1 / 2 / pf, 16, 256, 8);
        /* a tile of one or two columns streams op(A) as fast as its lines stay in L1 */
        if (nr <= 2)
            kc = gck_kernels_kc_ways(kc, bk.l1, bk.l1_ways, j->acs * (int64_t)sizeof(KT),
                                     mr * (int64_t)sizeof(KT) + pf);
    }
    if (lanes) kc = gck_kernels_kc_lanes(&bk, mr, (int)sizeof(KT));
#endif
    if (mc > rows) mc = rows;
    if (kc > kp) kc = kp;
    /* R: whole MC blocks of rows whose W fits in bk.w_bytes (at least one block) */
    int64_t R = bk.w_bytes / ((int64_t)sizeof(KT) * nc) / mc * mc;
    if (R < mc) R = mc;
    if (R > rows) R = rows;
    KT *tmp = gck_kbuf(j->bufs, KBUF_TMP,
                       (size_t)(R > EPI_ROWS * EPI_COLS ? R : EPI_ROWS * EPI_COLS) * sizeof(KT));
    if (!tmp) return false;
    if (!gck_case_reads_ab(c)) {
        for (int64_t ic = i0; ic < i1; ic += mc)
            KN(epilogue)(j, &bk, NULL, 0, C, D, ic, i1 - ic < mc ? i1 - ic : mc, j0, j1 - j0, tmp);
        return true;
    }
    /* op(B) read in place packs only its edge too: less than one tile */
    PT *bp = gck_kbuf(j->bufs, KBUF_B, (size_t)(kc * (ub ? nr : nc)) * sizeof(PT));
    /* op(A) read in place packs only its edge: one sliver */
    PT *ap = gck_kbuf(j->bufs, KBUF_A, (size_t)((ua ? mr : mc) * kc) * sizeof(PT));
    KT *w = gck_kbuf(j->bufs, KBUF_W, (size_t)(R * nc) * sizeof(KT));
    bool ok = bp && ap && w;
    /* W straight in D where the epilogue would copy it unchanged: D column-major in the compute
     * type (aligned to it), alpha 1 and C not read, one block of k (each tile then writes its
     * sums once: read back a block later from D's columns, a leading dimension of 2048 apart,
     * they cost f32 2048 x 16 x 1024 5%), and a block of whole tiles */
    bool to_d = !C && kc >= kp && (KT)c->alpha == 1 && j->drs == 1 &&
                (uintptr_t)D % sizeof(KT) == 0 &&
                gck_case_type(c, GCK_D) == (sizeof(KT) == 4 ? GCK_F32 : GCK_F64);
#if KP == 2
    to_d = to_d && !ops->bf16tile;
#endif
    kpanel pa = {A, c->type_a, gck_format_get(c->type_a)->storage_bytes, j->ars, j->acs, ops->f16c};
    kpanel pb = {B, c->type_b, gck_format_get(c->type_b)->storage_bytes, j->bcs, j->brs, ops->f16c};
    for (int64_t jc = j0; ok && jc < j1; jc += nc) {
        int64_t nb = j1 - jc < nc ? j1 - jc : nc;
        for (int64_t i2 = i0; i2 < i1; i2 += R) {
            int64_t rb = i1 - i2 < R ? i1 - i2 : R, ldw = (rb + mr - 1) / mr * mr;
            bool direct = to_d && rb % mr == 0 && nb % nr == 0;
            KT *wb = direct ? (KT *)D + i2 + jc * j->dcs : w;
            if (direct) {
                ldw = j->dcs;
                atomic_fetch_add(&direct_blocks, 1);
            }
            for (int64_t pc = 0; pc < c->k; pc += kc) {
                int64_t kb = c->k - pc < kc ? c->k - pc : kc, kbp = (kb + kal - 1) / kal * kal;
                /* unpacked: only the edge sliver, at the buffer's start */
                int64_t bx = ub ? nb / nr * nr : 0, ax;
                if (bx < nb) KN(pack)(bp, (int)blen, &pb, jc + bx, nb - bx, pc, kb, kbp);
                if (blen == 1) /* the columns of the last tile past the panel: zeros */
                    memset(bp + nb * kbp, 0,
                           (size_t)(((nb + nr - 1) / nr * nr - nb) * kbp) * sizeof(PT));
                for (int64_t ic = i2; ic < i2 + rb; ic += mc) {
                    int64_t mb = i2 + rb - ic < mc ? i2 + rb - ic : mc;
                    ax = ua ? mb / mr * mr : 0;
                    if (ax < mb) KN(pack)(ap, mr, &pa, ic + ax, mb - ax, pc, kb, kbp);
                    /* the tiles column by column; row by row when A is read in place, so that
                     * the next column's tile reads A's lines from cache */
                    int64_t nt = (nb + nr - 1) / nr, mt = (mb + mr - 1) / mr;
                    for (int64_t q = 0; q < nt * mt; q++) {
                        int64_t jr = (ua ? q % nt : q / mt) * nr, ir = (ua ? q / nt : q % mt) * mr;
                        KT *wt = wb + (ic - i2) + ir + jr * ldw;
                        const PT *at = ap + (ir < ax ? 0 : ir - ax) * kbp,
                                 *bt = bp + (jr < bx ? 0 : jr - bx) * kbp;
#if KP == 1 && !defined(KNOSUP)
                        if (sk) { /* every tile, packed slivers too, on the job's shape */
                            int64_t as = mr, bs = nr, bj = 1;
                            if (ir < ax) at = (const KT *)pa.base + (ic + ir) + pc * (as = pa.ks);
                            if (jr < bx)
                                bt = (const KT *)pb.base + (jc + jr) * (bj = pb.xs) +
                                     pc * (bs = pb.ks);
                            sk(kb, at, as, ir < ax ? pf : 0, bt, bs, bj, wt, ldw, pc == 0);
                            continue;
                        }
#endif
                        KUK(ops, kbp, at, bt, wt, ldw, pc == 0);
                    }
                }
            }
            if (!direct) KN(epilogue)(j, &bk, w, ldw, C, D, i2, rb, jc, nb, tmp);
        }
    }
    return ok;
}

#undef KT
#undef PT
#undef KP
#undef KN
#undef KLINE
#undef KIN
#undef KOUT
#undef KUK
#undef KSK
#undef KSKT
#undef KSAME
#undef KMR
#undef KNR
#undef KNOSUP
