// A deliberately broken tree for the include-rule test: the factory naming a concrete backend
// (progress may not include persistent/ or rma/, although they are below it).
// check_layers.cmake must reject it.
#include "common/backend_module.hpp"
#include "rma/rma.hpp"
