/* The blocked GEMM driver for one compute type, included once per type by gemm.c with
 *   KT  the compute type (float or double)
 *   KF  its gck_format (GCK_F32 or GCK_F64)
 *   KN(name)  name with the type's suffix
 *   KUK the path ops' micro-kernel member (f32 or f64), KMR/KNR its tile members.
 *
 * Loop order (GotoBLAS/BLIS, with the k loop inside the row blocks so that every element keeps
 * one accumulator from k = 0 to K-1):
 *   for each panel of NC columns:   pack op(B) for all k into NR-wide slivers (compute type)
 *     for each block of MC rows:
 *       for each block of KC steps: pack op(A) into MR-tall slivers; micro-kernels into W
 *       epilogue: D = alpha*W + beta*C for the block, in the compute type, rounded to D
 * Packed slivers are padded with zeros to whole tiles and W has whole tiles, so the micro-kernels
 * never see an edge: nothing outside the operands is read or written. */

/* op(A)(i, k0..k0+kb) for rows i0..i0+mb into MR-tall slivers, k-major, zero-padded. */
static void KN(pack_a)(KT *dst, const kjob *j, const void *A, int64_t i0, int64_t mb, int64_t k0,
                       int64_t kb, int mr) {
    const gck_case *c = j->c;
    for (int64_t s = 0; s < mb; s += mr)
        for (int64_t k = 0; k < kb; k++)
            for (int r = 0; r < mr; r++, dst++) {
                int64_t i = i0 + s + r;
                *dst = i < i0 + mb ? (KT)gck_load(A, c->type_a, i * j->ars + (k0 + k) * j->acs)
                                   : (KT)0;
            }
}

/* op(B)(0..K, j) for columns j0..j0+nb into NR-wide slivers, k-major, zero-padded. */
static void KN(pack_b)(KT *dst, const kjob *j, const void *B, int64_t j0, int64_t nb, int nr) {
    const gck_case *c = j->c;
    for (int64_t s = 0; s < nb; s += nr)
        for (int64_t k = 0; k < c->k; k++)
            for (int q = 0; q < nr; q++, dst++) {
                int64_t col = j0 + s + q;
                *dst =
                    col < j0 + nb ? (KT)gck_load(B, c->type_b, k * j->brs + col * j->bcs) : (KT)0;
            }
}

/* D = alpha*W + beta*C over rows i0..i0+mb, columns j0..j0+nb (W: that block, leading
 * dimension ldw; NULL when A and B are not read). */
static void KN(epilogue)(const kjob *j, const KT *w, int64_t ldw, const void *C, void *D,
                         int64_t i0, int64_t mb, int64_t j0, int64_t nb) {
    const gck_case *c = j->c;
    KT alpha = (KT)c->alpha, beta = (KT)c->beta;
    bool rc = gck_case_reads_c(c);
    gck_format td = gck_case_type(c, GCK_D);
    for (int64_t q = 0; q < nb; q++)
        for (int64_t r = 0; r < mb; r++) {
            int64_t i = i0 + r, col = j0 + q;
            KT t = w ? alpha * w[r + q * ldw] : (KT)0;
            if (rc) {
                KT cv = (KT)gck_load(C, c->type_c, i * j->crs + col * j->ccs);
                t = w ? t + beta * cv : beta * cv;
            }
            gck_store(D, td, i * j->drs + col * j->dcs, (double)t);
        }
}

/* One job's block of one batch member: rows i0..i1, columns j0..j1. */
static bool KN(block)(const kjob *j, const void *A, const void *B, const void *C, void *D,
                      int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const gck_case *c = j->c;
    const gck_kpath_ops *ops = j->ops;
    int mr = ops->KMR, nr = ops->KNR;
    if (!gck_case_reads_ab(c)) {
        KN(epilogue)(j, NULL, 0, C, D, i0, i1 - i0, j0, j1 - j0);
        return true;
    }
    gck_blocking bk = gck_kernels_blocking((int)sizeof(KT), mr, nr);
    /* the packed B panel holds all K steps: keep it within 8 MiB */
    int64_t nc = bk.nc, cap = ((int64_t)8 << 20) / ((int64_t)sizeof(KT) * c->k);
    if (nc > cap) nc = cap;
    nc = nc < nr ? nr : nc / nr * nr;
    int64_t mc = bk.mc, kc = bk.kc;
    KT *bp = malloc((size_t)(c->k * nc) * sizeof(KT));
    KT *ap = malloc((size_t)(mc * kc) * sizeof(KT));
    KT *w = malloc((size_t)(mc * nc) * sizeof(KT));
    bool ok = bp && ap && w;
    for (int64_t jc = j0; ok && jc < j1; jc += nc) {
        int64_t nb = j1 - jc < nc ? j1 - jc : nc;
        KN(pack_b)(bp, j, B, jc, nb, nr);
        for (int64_t ic = i0; ic < i1; ic += mc) {
            int64_t mb = i1 - ic < mc ? i1 - ic : mc;
            for (int64_t pc = 0; pc < c->k; pc += kc) {
                int64_t kb = c->k - pc < kc ? c->k - pc : kc;
                KN(pack_a)(ap, j, A, ic, mb, pc, kb, mr);
                for (int64_t jr = 0; jr < nb; jr += nr)
                    for (int64_t ir = 0; ir < mb; ir += mr)
                        ops->KUK(kb, ap + ir * kb, bp + jr * c->k + pc * nr, w + ir + jr * mc, mc,
                                 pc == 0);
            }
            KN(epilogue)(j, w, mc, C, D, ic, mb, jc, nb);
        }
    }
    free(bp);
    free(ap);
    free(w);
    return ok;
}
