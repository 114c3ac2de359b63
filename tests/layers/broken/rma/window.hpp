// A deliberately broken tree for the include-rule test: a backend including the other one
// and a layer including one above it. check_layers.cmake must reject it.
#pragma once
#include "persistent/backend.hpp"
#include "common/log.hpp"
