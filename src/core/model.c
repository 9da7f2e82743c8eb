/* The arithmetic model (gemmcheck/model.h). */
#include "gemmcheck/model.h"

unsigned gck_model_orders(const gck_model *m) { return m->orders ? m->orders : GCK_ORDERS_ANY; }

const char *gck_rounding_name(gck_rounding r) {
    return r == GCK_ROUND_NEAREST ? "nearest" : r == GCK_ROUND_FAITHFUL ? "faithful" : "?";
}
