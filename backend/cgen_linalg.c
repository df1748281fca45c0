/* C backend emitters of the linalg op family. (empty: being written) */
#include "backend/cgen.h"

void cgen_register_linalg(CgenEmitFn *table) { (void)table; }
