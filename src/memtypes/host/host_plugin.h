// Host memory plugin: ordinary process memory, copied with memcpy. Its detect() is never on
// the fast path: the registry answers "host" itself when no device plugin is loaded, and
// after the device plugins all said "not mine" otherwise.
#pragma once

#include "memtypes/memtype.h"

namespace swy::mem {

/// Fill @p out with the host plugin's table. Cannot fail.
void create_host_plugin(MemTypePlugin* out);

}  // namespace swy::mem
