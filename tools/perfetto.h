#pragma once
// Replay results as Chrome trace event JSON, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one process per configuration, a counter track per pool ("all pools"
// first) with its live, cached and reserved MiB, and an instant event for each LRU reclaim,
// flush, injected fault and OUT_OF_MEMORY. Timestamps are the trace's.

#include "replay.h"

#include <string>
#include <vector>

namespace replay {

// false and *error when the file cannot be written
bool write_perfetto(const std::string & path, const std::vector<result> & results, std::string * error);

} // namespace replay
