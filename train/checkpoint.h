// Checkpoints: one directory per step, `<root>/step-NNNNNNNN/`, holding meta.json (see
// checkpoint_meta.h: resolved config, step, run lineage, world size, ZeRO stage, tokenizer and
// data hashes, the size and xxh64 of every other file, and a checksum of itself), the
// parameters, one optimizer-state file per rank, an optional copy of the tokenizer, and a `DONE`
// marker written last. Everything is written into `<root>/.step-NNNNNNNN.tmp/` and renamed into
// place, so a crash mid-save leaves the previous checkpoint whole; a directory without DONE is
// never loaded.
#pragma once
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/atomic_file.h"

#include "train/checkpoint_meta.h"

namespace sixnd {

// Under ZeRO every rank writes its own optimizer file into the same temporary directory:
// rank 0 creates it (create = true) and commits; the other ranks only add files, between
// barriers the trainer places.
class CheckpointWriter {
public:
    CheckpointWriter(const std::string& root, int step, bool create);
    ~CheckpointWriter();  // the creator removes the temporary directory unless commit() succeeded
    void add_file(const std::string& name, const void* data, size_t bytes);
    // A file written in pieces, `write` handing each to the open file.
    void add_file(const std::string& name, const std::function<void(AtomicFile&)>& write);
    // Checksums every file in the directory into meta.json, writes DONE, renames into place.
    // Returns the final directory.
    std::string commit(CheckpointMeta meta);

private:
    std::string final_, tmp_;
    bool create_;
    bool committed_ = false;
};

class CheckpointReader {
public:
    // Checks DONE, meta.json and every file's size and checksum; throws Error naming the file.
    explicit CheckpointReader(const std::string& dir);
    const CheckpointMeta& meta() const { return meta_; }
    const std::string& dir() const { return dir_; }
    bool has_file(const std::string& name) const { return meta_.files.count(name) > 0; }
    std::string read_file(const std::string& name) const;
    std::string path_of(const std::string& name) const { return dir_ + "/" + name; }

private:
    std::string dir_;
    CheckpointMeta meta_;
};

// A step directory under a checkpoint root, as found on disk.
struct CheckpointEntry {
    std::string dir;
    int step = 0;
    bool complete = false;  // has DONE
    std::string run_id;     // from its meta.json (DONE or not); "" when that is missing or unreadable
};
// Every `step-NNNNNNNN` directory under root, by step. A symlink or file of that name is not
// one of them (see refuse_foreign_step_entries).
std::vector<CheckpointEntry> list_checkpoints(const std::string& root);
// Throws Error naming the first `step-NNNNNNNN` under root that is not a plain directory (a
// symlink, a file): `latest` would resume through it and a save of its step would replace it,
// yet no run wrote it.
void refuse_foreign_step_entries(const std::string& root);

// The newest complete checkpoint under root (by step), or "" when there is none.
std::string latest_checkpoint(const std::string& root);
// Whether name is a checkpoint step directory's, as the trainer spells it: step-NNNNNNNN (eight
// digits, more from step 100,000,000 on).
bool is_checkpoint_name(const std::string& name);
// A checkpoint directory as a path whose filename is its step's name: "…/step-00000100/" and
// "…/./step-00000100" alike are "…/step-00000100".
std::filesystem::path checkpoint_path(const std::string& dir);
// A checkpoint's meta.json, parsed and checked: a regular file only (a FIFO would be read until
// a writer that never comes closes it).
CheckpointMeta read_meta(const std::string& path);
// Deletes a checkpoint directory so that a crash midway leaves either all of it or none of it
// under its name: it is renamed to a hidden `.step-NNNNNNNN.deleting` first, then removed.
void remove_checkpoint(const std::string& dir);

// A save of a step that already had a checkpoint swaps the new copy in; where the file system
// cannot swap in one step, the earlier copy is moved aside first, and a writer killed (SIGKILL,
// a crash) between the two renames leaves the step's name empty and the earlier copy hidden as
// .step-N.old.PID. Puts every such copy of a process that no longer exists back under its step's
// name, saying so; prune_checkpoints would otherwise delete it at the next save. Rank 0, under
// the run directory's lock, before --resume looks for a checkpoint.
void restore_moved_aside_checkpoints(const std::string& root);

// Finishes the deletions remove_checkpoint began in a process killed midway: each hidden
// `.step-N.deleting` left under root is removed (it held a whole checkpoint's bytes, and only a
// later deletion of step N would have freed them). Rank 0, under the run directory's lock.
void finish_interrupted_removals(const std::string& root);

// "step-00000002", or "step-00000002 .. step-00000008", for step directories in order (messages).
std::string step_range(const std::vector<std::string>& dirs);

// After lineage `run_id` saved `newest_step`: removes stale hidden directories (`.step-*`:
// temporaries, and what a crash mid-save or mid-delete left); the lineage's complete checkpoints
// newer than `newest_step`, the future of a branch abandoned by resuming (or rolling back to) an
// older step, so that `latest` continues this branch; and its complete checkpoints older than
// `newest_step` beyond the newest `keep` (0: keep all). Never touches the checkpoint at
// `newest_step` or another lineage's. With `rollback_horizon` >= 0 (--on-spike rollback:
// max(0, newest_step + 1 - --rollback-steps), the latest step a spike after this save may roll
// back to), the newest checkpoint at or before it and every newer one stay whatever `keep` says
// (all of them while none is that old): a spike at any later step rolls back to the newest of
// them old enough, as with --keep-last 0, where --keep-last had deleted it and the spike was
// skipped for want of a state to go back to.
void prune_checkpoints(const std::string& root, int keep, const std::string& run_id, int newest_step,
                       int rollback_horizon = -1);

uint64_t xxh64_bytes(const void* data, size_t bytes);

}  // namespace sixnd
