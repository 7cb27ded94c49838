#pragma once
// The recorded row: nothing replayed, the trace's own numbers. Live bytes come from the sizes of
// what was allocated and freed, reserved bytes as each pool reported them after each call; the
// driver's allocations, frees, reclaims and flushes are NONE (a trace does not say).

#include "replay.h"

namespace replay {

result recorded(const trace & t, const options & o);

} // namespace replay
