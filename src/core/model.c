/* The arithmetic model (gemmcheck/model.h). */
#include "gemmcheck/model.h"

unsigned gck_model_orders(const gck_model *m) { return m->orders ? m->orders : GCK_ORDERS_ANY; }
