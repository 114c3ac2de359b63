// Part of the deliberately broken tree (see ../rma/window.hpp).
#pragma once
