// A process started with standard input, output or error closed (`2>&-`, a daemon's launcher)
// would hand those slots to the next files it opens, and every log line or printed result would
// then be written into a scratch file, a shard or a checkpoint. occupy_closed_std_fds(), for
// main to call before anything opens a file, fills each closed slot with /dev/null opened the
// wrong way round (stdin for writing, stdout and stderr for reading): the slot is taken, and a
// read or write there still fails with EBADF, as on the closed descriptor, so a result lost to a
// closed stdout is still reported as lost.
#pragma once

namespace sixnd {

void occupy_closed_std_fds();

}  // namespace sixnd
