/* C backend emitters of the data op family. (empty: being written) */
#include "backend/cgen.h"

void cgen_register_data(CgenEmitFn *table) { (void)table; }
